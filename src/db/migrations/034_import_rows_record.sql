-- A staged import line that is not a customer patch: a TGEN customer notes record (src/imports/tgen.ts), kept whole
-- as jsonb until its chunk is applied (src/imports/tgen-notes.ts). NULL for every customer line.
ALTER TABLE import_rows ADD COLUMN record jsonb;
