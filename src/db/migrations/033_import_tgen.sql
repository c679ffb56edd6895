-- Imports of Tulip's TGEN CSV files (POST /crm/imports?format=tgen, src/imports/tgen.ts): the format 'tgen', and the
-- TGEN file the import read (kind, import type and API version, e.g. "customers partialupdate 2025-08"), shown on the import.
ALTER TABLE imports DROP CONSTRAINT imports_format_check;
ALTER TABLE imports ADD CONSTRAINT imports_format_check CHECK (format IN ('ndjson', 'csv', 'tgen'));
ALTER TABLE imports ADD COLUMN tgen_file text;
