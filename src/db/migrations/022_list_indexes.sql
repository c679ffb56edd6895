-- bulb:outside-transaction (see src/db/migrate.ts)
-- Lists that read what they list (test/crm/list-scale.test.ts counts their buffers on a large table).
--
-- The audit log filtered by actor name (GET /integrations/auditLog?actor=<name>) or by the system actor
-- (?actor=system) had no index: a page walked audit_log newest first, the whole table for a name with few
-- rows. audit_log is append-only and written once per administrative act (merges, undos, imports, keys,
-- subscriptions): one entry more per row, and the system index holds only the system's rows (a subscription
-- disabled automatically).
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_log_actor_name ON audit_log (actor_name, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_log_system ON audit_log (id) WHERE actor_type = 'system';

-- A customer's merge history (GET /crm/customers/C/merges) and the undo's check for a later merge read the
-- merges naming a customer among their secondaries from this GIN index. With fast update (the default) new
-- entries wait in a pending list that every search reads whole until a VACUUM merges it (on PGlite ~40 pages
-- after 15,000 merges, where the index itself answers in 3). A merge adds one entry per secondary: written
-- straight into the index, as migration 020 does for customer emails; what waits is merged now.
ALTER INDEX merges_secondaries SET (fastupdate = off);
SELECT gin_clean_pending_list('merges_secondaries');
