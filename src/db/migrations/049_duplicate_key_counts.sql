-- Possible duplicates at scale (issue 25): how many customers bear each blocking key and each folded name,
-- kept by statement triggers on duplicate_keys and duplicate_profiles (whoever writes them, in the same
-- transaction), so the refresher reads a key's count with one index probe instead of walking its bearers.
-- A blocking key borne by more than its cap brings nobody together (src/crm/duplicates/refresh.ts): without
-- the cap a city-level key's bearers grew with the base (7,615 for one key at 1M customers) and so did every
-- batch's candidates. Names are counted under 'f:' || name (commonNameFloor needs a name's count).
CREATE TABLE duplicate_key_counts (
  key     text PRIMARY KEY,
  bearers integer NOT NULL
);

CREATE FUNCTION duplicate_keys_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO duplicate_key_counts (key, bearers) SELECT key, count(*) FROM new_rows GROUP BY key ORDER BY key
    ON CONFLICT (key) DO UPDATE SET bearers = duplicate_key_counts.bearers + excluded.bearers;
  ELSE
    UPDATE duplicate_key_counts c SET bearers = c.bearers - o.n
    FROM (SELECT key, count(*) AS n FROM old_rows GROUP BY key) o WHERE c.key = o.key;
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION duplicate_names_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO duplicate_key_counts (key, bearers) SELECT 'f:' || name, count(*) FROM new_rows GROUP BY name ORDER BY name
    ON CONFLICT (key) DO UPDATE SET bearers = duplicate_key_counts.bearers + excluded.bearers;
  ELSE
    UPDATE duplicate_key_counts c SET bearers = c.bearers - o.n
    FROM (SELECT 'f:' || name AS key, count(*) AS n FROM old_rows GROUP BY name) o WHERE c.key = o.key;
  END IF;
  RETURN NULL;
END $$;

-- Nobody writes keys or profiles while the counts are taken (the refresher waits; customer writes only queue).
LOCK TABLE duplicate_keys, duplicate_profiles IN SHARE MODE;

CREATE TRIGGER duplicate_keys_count_insert AFTER INSERT ON duplicate_keys
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION duplicate_keys_counted();
CREATE TRIGGER duplicate_keys_count_delete AFTER DELETE ON duplicate_keys
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION duplicate_keys_counted();
CREATE TRIGGER duplicate_profiles_count_insert AFTER INSERT ON duplicate_profiles
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION duplicate_names_counted();
CREATE TRIGGER duplicate_profiles_count_delete AFTER DELETE ON duplicate_profiles
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION duplicate_names_counted();

INSERT INTO duplicate_key_counts (key, bearers)
SELECT key, count(*) FROM duplicate_keys GROUP BY key
UNION ALL
SELECT 'f:' || name, count(*) FROM duplicate_profiles GROUP BY name;
