-- Webhook delivery per subscription (SPEC §11): a settable in-flight ceiling, receiver back-pressure
-- (Retry-After) that holds a subscription's next attempts, and notifications that name the subscriptions
-- with new due work, so a worker claims from those lanes only (claim cost independent of how many
-- subscriptions exist and how long the backlog is).

ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_max_in_flight CHECK (max_in_flight BETWEEN 1 AND 64);
-- Retry-After of a 429/503: no attempt for this subscription before then (any worker).
ALTER TABLE webhook_subscriptions ADD COLUMN paused_until timestamptz;

-- The claim reads one subscription's due rows in due order; leased rows are skipped by a filter (at most the
-- subscription's in-flight attempts sit at the head of its lane).
-- (webhook_deliveries_due (subscription_id, next_attempt_at, id) WHERE status = 'pending' from 003 serves it.)
DROP INDEX IF EXISTS webhook_deliveries_leased;

-- NOTIFY bulb_webhooks '<sub id>,<sub id>…' once per statement that makes deliveries due now (fan-out, manual
-- retry, recover, released claims), and when a subscription is re-activated. Identical payloads in one
-- transaction are folded by PostgreSQL. A payload that would be too long says '*' (look everywhere).
CREATE FUNCTION bulb_webhook_due_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE ids text;
BEGIN
  SELECT string_agg(DISTINCT subscription_id::text, ',') INTO ids FROM new_rows
    WHERE status = 'pending' AND locked_until IS NULL AND next_attempt_at <= clock_timestamp();
  IF ids IS NOT NULL THEN
    PERFORM pg_notify('bulb_webhooks', CASE WHEN length(ids) > 7000 THEN '*' ELSE ids END);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER webhook_deliveries_due_ins AFTER INSERT ON webhook_deliveries
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bulb_webhook_due_notify();
CREATE TRIGGER webhook_deliveries_due_upd AFTER UPDATE ON webhook_deliveries
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bulb_webhook_due_notify();

CREATE FUNCTION bulb_webhook_sub_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('bulb_webhooks', NEW.id::text);
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_subscriptions_reactivated AFTER UPDATE ON webhook_subscriptions
  FOR EACH ROW WHEN (NEW.is_active AND NEW.deleted_at IS NULL AND (NOT OLD.is_active OR OLD.max_in_flight <> NEW.max_in_flight))
  EXECUTE FUNCTION bulb_webhook_sub_notify();
