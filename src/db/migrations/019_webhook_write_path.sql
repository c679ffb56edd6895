-- The delivery write path: what each attempt costs the database, trimmed to what is read (BENCHMARKS.md, the drain).
-- Per delivery the worker writes a lease, a result and an attempt row; each index and foreign key on those
-- rows is paid on every delivery.

-- An attempt's subscription and event are its delivery's: the delivery's foreign key already cascades from
-- both (an event or subscription deleted deletes its deliveries, and so their attempts), so these two checks
-- per attempt row guarded nothing more.
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_subscription_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_event_id_fkey;

-- The chart reads attempts since a time for every subscription (webhook_attempts_started serves it); nothing
-- reads by (subscription, time). Attempts are appended in start order, so a BRIN index serves the time ranges
-- (the chart, retention) at almost no cost per insert. New page ranges are summarised by autovacuum
-- (autosummarize) and by the retention purge (brin_summarize_new_values: PGlite runs no autovacuum); until then
-- a scan reads them, which are the newest attempts.
DROP INDEX webhook_attempts_sub_started;
DROP INDEX webhook_attempts_started;
CREATE INDEX webhook_attempts_started ON webhook_attempts USING brin (started_at) WITH (autosummarize = on);

-- The lease (locked_until, lock_token: no index names them) can then be a heap-only update: room is left on
-- each page of new deliveries for their claims' new row versions, instead of a new entry in every index.
ALTER TABLE webhook_deliveries SET (fillfactor = 60);

-- Notify only for updates that make a delivery due now (manual retry, recover, re-queue, released claims): a
-- row trigger whose condition is checked as the row is written, instead of collecting every updated row of
-- every claim and result write for a statement trigger to scan.
DROP TRIGGER webhook_deliveries_due_upd ON webhook_deliveries;
CREATE FUNCTION bulb_webhook_due_notify_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('bulb_webhooks', NEW.subscription_id::text);
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_deliveries_due_upd AFTER UPDATE ON webhook_deliveries
  FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.locked_until IS NULL AND NEW.next_attempt_at <= clock_timestamp())
  EXECUTE FUNCTION bulb_webhook_due_notify_row();
