-- Broker URL passwords in the audit log: until this release a subscription's audit details kept the request's
-- `url` as given, password and all (`amqp://user:password@…`: subscription.created, .changed, .disabled), while the
-- API showed `***` (docs/destinations.md). Written since with the password as `***` (src/audit/actions.ts,
-- changesOf, the same pattern); this rewrites the rows written before.
-- The log is append-only (migration 008): its UPDATE trigger is disabled for this one statement, knowingly, and
-- enabled again in the same transaction, so no other transaction ever sees it disabled. DISABLE TRIGGER takes a
-- SHARE ROW EXCLUSIVE lock on audit_log until commit: reads go on, audited acts' inserts wait for the update,
-- which reads the subscription actions' ranges of audit_log_action only (not the merges and the rest).
ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update_delete;

UPDATE audit_log a
SET details = jsonb_set(a.details, '{url}', to_jsonb(r.url))
FROM (SELECT id, regexp_replace(details->>'url', '^([a-zA-Z][a-zA-Z0-9+.-]*://[^:/?#]*):[^/?#]*@', '\1:***@') AS url
      FROM audit_log
      WHERE action IN ('subscription.created', 'subscription.changed', 'subscription.disabled')
        AND jsonb_typeof(details->'url') = 'string') r
WHERE a.id = r.id AND r.url <> a.details->>'url';

ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_update_delete;
