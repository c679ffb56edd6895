-- Imports (SPEC §12): one row per uploaded file, and a staging table the upload is streamed into.
-- Workers apply staging rows in chunks; applied_line and the counters are committed with each chunk,
-- so a worker killed mid-import resumes after the last committed chunk (no row applied twice).

CREATE TABLE imports (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid          uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  status        text NOT NULL DEFAULT 'receiving'
                CHECK (status IN ('receiving', 'queued', 'running', 'completed', 'failed', 'cancelled')),
  format        text NOT NULL CHECK (format IN ('ndjson', 'csv')),
  with_events   boolean NOT NULL,
  source        text NOT NULL,                 -- event source of the changes ({SERVICE}_API / _APP)
  token_uuid    uuid,                          -- API key or auth client that started it
  rows_received bigint NOT NULL DEFAULT 0,
  applied_line  bigint NOT NULL DEFAULT 0,     -- every staging row up to this line is applied
  rows_done     bigint NOT NULL DEFAULT 0,
  created       bigint NOT NULL DEFAULT 0,
  updated       bigint NOT NULL DEFAULT 0,
  unchanged     bigint NOT NULL DEFAULT 0,
  failed        bigint NOT NULL DEFAULT 0,
  error         text,                          -- why a whole import failed (upload interrupted, …)
  lock_token    uuid,                          -- the worker holding it, until locked_until
  locked_until  timestamptz,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  started_at    timestamptz,
  finished_at   timestamptz,
  updated_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX imports_todo ON imports (id) WHERE status IN ('queued', 'running', 'receiving');

-- Staging: one row per data line of the file. item is the line as a valid 2026-11 bulk item, or NULL
-- when the line was refused at upload; errors says why a line failed (at upload or when applied).
CREATE TABLE import_rows (
  import_id bigint NOT NULL,
  line      bigint NOT NULL,
  item      jsonb,
  errors    jsonb,
  PRIMARY KEY (import_id, line)
);
CREATE INDEX import_rows_errors ON import_rows (import_id, line) WHERE errors IS NOT NULL;
