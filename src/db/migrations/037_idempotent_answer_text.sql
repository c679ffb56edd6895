-- An Idempotency-Key's stored answer is replayed byte for byte (SPEC §13: the replay of a merge or an undo is the
-- first answer). It was stored as jsonb, which keeps objects with their keys reordered (shorter keys first, then
-- by bytes): the replay's JSON listed the same fields in another order ("dryRun" first, "mergeUuid" after
-- "primary"), on both engines. json keeps the text as it was written, so the replay parses back to the object in
-- the order it was answered, and is serialised the same way (test/crm/merge-undo.test.ts, merge.test.ts).
-- The table holds 24 hours of keys (src/crm/idempotency/store.ts): rewritten in the migration's transaction.
ALTER TABLE idempotency_keys ALTER COLUMN body TYPE json USING body::json;
