-- Possible duplicates at 5M customers (issue 25): the refresher's cost per customer grew with the base because
-- what it touches per customer no longer fitted in memory (duplicate_key_counts 1.5 GB, duplicate_keys 2.3 GB,
-- duplicate_profiles 1.1 GB at 5M; one block in ten read from outside shared_buffers). Two changes, both taking
-- away random reads that grew with the base (docs/duplicates.md):
-- 1. Only names ('f:') and words of names ('w:') are counted in duplicate_key_counts: their steps need a count
--    without a bound. A blocking key (email, phone, name with a place) only needs to know whether it is past its
--    cap (at most 51), which one probe of duplicate_keys' own index tells, reading at most that many entries, on
--    the leaf its insert touches anyway: one row per blocking key (nearly one per customer and street) is gone,
--    and so is its upsert per key written.
-- 2. duplicate_profiles' primary key carries the name, so the candidate search sifts candidates by name with
--    the index alone and reads the whole profile (heap) only of the candidates that can reach the stored floor.
-- Under the refresher's advisory lock (refresh.ts), as migration 058: the refresher waits, customer writes only queue.
SELECT pg_advisory_xact_lock(740213517);

CREATE OR REPLACE FUNCTION duplicate_keys_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO duplicate_key_counts (key, bearers) SELECT key, count(*) FROM new_rows WHERE key LIKE 'w:%' GROUP BY key ORDER BY key
    ON CONFLICT (key) DO UPDATE SET bearers = duplicate_key_counts.bearers + excluded.bearers;
  ELSE
    UPDATE duplicate_key_counts c SET bearers = c.bearers - o.n
    FROM (SELECT key, count(*) AS n FROM old_rows WHERE key LIKE 'w:%' GROUP BY key) o WHERE c.key = o.key;
  END IF;
  RETURN NULL;
END $$;

-- The counts kept: a new table with the names' and words' rows only (a DELETE of the others would write every
-- one of them to the WAL: tens of millions at 5M customers).
ALTER TABLE duplicate_key_counts RENAME TO duplicate_key_counts_before_061;
ALTER INDEX duplicate_key_counts_pkey RENAME TO duplicate_key_counts_before_061_pkey;
CREATE TABLE duplicate_key_counts (
  key     text PRIMARY KEY,  -- 'f:' || folded name | 'w:' || word of a name
  bearers integer NOT NULL
);
INSERT INTO duplicate_key_counts (key, bearers)
SELECT key, bearers FROM duplicate_key_counts_before_061 WHERE (key LIKE 'f:%' OR key LIKE 'w:%') AND bearers > 0;
DROP TABLE duplicate_key_counts_before_061;

CREATE UNIQUE INDEX duplicate_profiles_id_name ON duplicate_profiles (customer_id) INCLUDE (name);
ALTER TABLE duplicate_profiles DROP CONSTRAINT duplicate_profiles_pkey,
  ADD CONSTRAINT duplicate_profiles_pkey PRIMARY KEY USING INDEX duplicate_profiles_id_name;
