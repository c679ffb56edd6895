-- bulb:outside-transaction (see src/db/migrate.ts: the indexes are built while the API goes on writing)
-- Lists that read what they list, for filters given together (issue 25: no request's cost may grow with a table's
-- size; test/crm/list-scale.test.ts counts their buffers).
--
-- The audit log by action and actor (GET /integrations/auditLog?action=…&actor=…): each filter had an index of its
-- own, none both. The planner multiplied the two filters' shares (an integration's key writes half the log, imports a
-- third) and walked the primary key newest first for a page it expected within a few hundred rows, the whole log
-- when no row has both (400,021 rows read at 800,000; a probe, 2026-11-30). One index per actor kind, action first:
-- src/audit/store.ts listAudit names the action as `= ANY` and orders by it, so that only these give the page's order.
-- audit_log is append-only, written once per administrative act: three entries more per act (the system's index
-- holds the system's acts only: subscriptions disabled automatically, the bootstrap key).
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_log_action_actor ON audit_log (action, actor_uuid, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_log_action_actor_name ON audit_log (action, actor_name, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_log_system_action ON audit_log (action, id) WHERE actor_type = 'system';

-- The disabled customers changed since a time (GET /crm/customers?status=disabled&updatedSince=…, and the legacy
-- /tulip_api/v2 path): a page walked customers_updated (updated_at, id) and kept the disabled ones, reading
-- limit / (share of the changed that are disabled) rows, the whole window when fewer than a page are (345 → 1,353
-- buffers from 200,000 to 800,000 customers). The statement writes 'disabled' as a literal, which this index's
-- predicate matches: the page reads the disabled ones only, in the sync's order. Disabled customers are the merged
-- away (and the few disabled by hand): a write to an active customer does not touch it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS customers_disabled_updated ON customers (updated_at, id) WHERE status = 'disabled';
