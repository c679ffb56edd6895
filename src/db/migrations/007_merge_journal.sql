-- The merge journal (SPEC §13): what each merge moved, removed and re-pointed, so that it can be undone.
-- Moved rows are journaled compactly: one row per (merge, table, former customer) holding the ids moved
-- (written by the same statement that moves them), so a 100k-row merge adds a few rows, not 100k.

ALTER TABLE merges ADD COLUMN undone_at timestamptz;
-- Customers the merge re-pointed (they had been merged into one of its secondaries): id → former survivor.
ALTER TABLE merges ADD COLUMN repointed_ids bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE merges ADD COLUMN repointed_from bigint[] NOT NULL DEFAULT '{}';

CREATE TABLE merge_moves (
  merge_id      bigint NOT NULL REFERENCES merges(id) ON DELETE CASCADE,
  table_name    text NOT NULL,
  from_customer bigint NOT NULL,
  row_ids       bigint[] NOT NULL
);
CREATE INDEX merge_moves_merge ON merge_moves (merge_id);

-- Associations removed as duplicates, whole (same id and uuid come back on undo).
CREATE TABLE merge_removed_associations (
  merge_id     bigint NOT NULL REFERENCES merges(id) ON DELETE CASCADE,
  id           bigint NOT NULL,
  uuid         uuid NOT NULL,
  customer_id  bigint NOT NULL,
  associate_id bigint NOT NULL,
  role         text,
  created_at   timestamptz NOT NULL
);
CREATE INDEX merge_removed_associations_merge ON merge_removed_associations (merge_id);
