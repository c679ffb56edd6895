-- Time partitioning of the high-volume tables (docs/partitioning.md): the functions that convert a running
-- deployment's table into a partitioned one, one step per statement of migration 054 (run outside a transaction, so
-- the long steps, index builds and the CHECK's validation, take no lock that stops writes). Each step can run again.
-- Convoy's way: the old table is adopted whole as the partition [MINVALUE, cutover), proven by a CHECK constraint
-- validated beforehand, so the ATTACH under the strong lock reads no row.

-- The cutover: the start of the day after tomorrow (UTC), so that rows written until the swap still fit below it.
-- A CHECK (key < cutover) NOT VALID (brief lock, no scan); an older one whose cutover is less than a day away (a
-- conversion interrupted and resumed much later) is replaced. Returns the cutover.
CREATE FUNCTION bulb_partition_check(tbl text, key text) RETURNS timestamptz LANGUAGE plpgsql AS $fn$
DECLARE
  con text := tbl || '_before_cutover';
  def text;
  cut timestamptz;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = tbl::regclass) = 'p' THEN RETURN NULL; END IF;
  SELECT pg_get_constraintdef(oid) INTO def FROM pg_constraint WHERE conrelid = tbl::regclass AND conname = con;
  IF def IS NOT NULL THEN
    cut := substring(def FROM '''([^'']+)''')::timestamptz;
    IF cut > now() + interval '1 day' THEN RETURN cut; END IF;
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', tbl, con);
  END IF;
  cut := (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '2 days') AT TIME ZONE 'UTC';
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I < %L::timestamptz) NOT VALID', tbl, con, key, cut);
  RETURN cut;
END $fn$;

-- Validates the cutover CHECK, and every other CHECK left NOT VALID (a widened one: a partition's must match its
-- parent's, which are valid): reads the table, under a lock that lets writes go on.
CREATE FUNCTION bulb_partition_validate(tbl text) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  r record;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = tbl::regclass) = 'p' THEN RETURN; END IF;
  FOR r IN SELECT conname FROM pg_constraint WHERE conrelid = tbl::regclass AND contype = 'c' AND NOT convalidated LOOP
    EXECUTE format('ALTER TABLE %I VALIDATE CONSTRAINT %I', tbl, r.conname);
  END LOOP;
END $fn$;

-- The swap, in one transaction and under one strong lock, reading no row: tbl becomes <tbl>_legacy, a partitioned
-- table of the same columns takes its name (the identity continued from the old sequence, the same indexes and
-- triggers, the primary key (id, key), a plain index on uuid), and adopts <tbl>_legacy as its partition
-- [MINVALUE, cutover) and a DEFAULT partition (kept empty by the partitions job). Needs, built beforehand
-- (concurrently): a unique index <tbl>_legacy_id_key on (id, key) and, with_uuid, an index <tbl>_legacy_uuid on
-- (uuid) (without: the table has no index on uuid; nothing looks its rows up by it).
-- fk: the foreign keys to carry over, as ADD CONSTRAINT clauses (the legacy's equivalent ones are adopted, not
-- validated again).
CREATE FUNCTION bulb_partition_swap(tbl text, key text, fks text[], with_uuid boolean DEFAULT true) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  legacy text := tbl || '_legacy';
  cut timestamptz;
  last bigint;
  r record;
  idx text[] := '{}';
  trg text[] := '{}';
  s text;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = tbl::regclass) = 'p' THEN RETURN; END IF;
  EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', tbl);
  SELECT substring(pg_get_constraintdef(oid) FROM '''([^'']+)''')::timestamptz INTO cut
    FROM pg_constraint WHERE conrelid = tbl::regclass AND conname = tbl || '_before_cutover' AND convalidated;
  IF cut IS NULL THEN RAISE EXCEPTION '%: no validated cutover constraint', tbl; END IF;
  IF cut <= clock_timestamp() THEN RAISE EXCEPTION '%: the cutover % has passed: run the migration again', tbl, cut; END IF;
  last := pg_sequence_last_value(pg_get_serial_sequence(tbl, 'id'));
  EXECUTE format('ALTER TABLE %I RENAME TO %I', tbl, legacy);
  -- Triggers: a partition may not have triggers with transition tables; the parent gets them all.
  FOR r IN SELECT tgname, pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgrelid = legacy::regclass AND NOT tgisinternal LOOP
    trg := trg || regexp_replace(r.def, format(' ON (public\.)?%I ', legacy), format(' ON %I ', tbl));
    EXECUTE format('DROP TRIGGER %I ON %I', r.tgname, legacy);
  END LOOP;
  -- A partition may not have an identity column: the parent's continues the sequence.
  EXECUTE format('ALTER TABLE %I ALTER COLUMN id DROP IDENTITY', legacy);
  -- The primary key and unique constraints go (a unique index on a partitioned table must hold the key); the
  -- identity keeps ids unique, and (id, key) is the new primary key.
  FOR r IN SELECT conname FROM pg_constraint WHERE conrelid = legacy::regclass AND contype IN ('p', 'u') LOOP
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', legacy, r.conname);
  END LOOP;
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I UNIQUE USING INDEX %I', legacy, legacy || '_id_key', legacy || '_id_key');
  -- The other indexes: renamed on the legacy table, and made again (the same definition) on the parent, which the
  -- ATTACH below matches with the legacy's own.
  FOR r IN SELECT c.relname, pg_get_indexdef(c.oid) AS def FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid = legacy::regclass AND NOT i.indisunique AND c.relname NOT LIKE legacy || '\_%' LOOP
    idx := idx || regexp_replace(r.def, format(' ON (public\.)?%I ', legacy), format(' ON %I ', tbl));
    EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname, left('l_' || r.relname, 63));
  END LOOP;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS) PARTITION BY RANGE (%I)', tbl, legacy, key);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', tbl, tbl || '_before_cutover');
  EXECUTE format('ALTER TABLE %I ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME %I START WITH %s)', tbl, tbl || '_id_seq', coalesce(last, 0) + 1);
  EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (id, %I)', tbl, key);
  IF with_uuid THEN EXECUTE format('CREATE INDEX %I ON %I (uuid)', tbl || '_uuid', tbl); END IF;
  FOREACH s IN ARRAY idx LOOP EXECUTE s; END LOOP;
  FOREACH s IN ARRAY trg LOOP EXECUTE s; END LOOP;
  FOREACH s IN ARRAY fks LOOP EXECUTE format('ALTER TABLE %I ADD %s', tbl, s); END LOOP;
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', tbl, legacy, cut);
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', tbl || '_default', tbl);
END $fn$;
