-- Webhooks 2026-11 (SPEC §10.2, §11, §7 rotation): subscriptions listen to a list of event types, carry
-- their endpoint health, keep every rotated-out secret until its own expiry, and a manual retry of a
-- pending delivery remembers the schedule it interrupted.

-- Several event types per subscription, in the order given (the first is what older versions see).
ALTER TABLE webhook_subscriptions ADD COLUMN event_types text[];
UPDATE webhook_subscriptions SET event_types = ARRAY[event_type];
ALTER TABLE webhook_subscriptions ALTER COLUMN event_types SET NOT NULL;
DROP INDEX webhook_subscriptions_type;
ALTER TABLE webhook_subscriptions DROP COLUMN event_type;
-- Fan-out finds the active subscriptions whose list contains an event's type (event_types @> ARRAY[type]).
CREATE INDEX webhook_subscriptions_types ON webhook_subscriptions USING gin (event_types) WHERE is_active AND deleted_at IS NULL;

-- Endpoint health (SPEC §11), kept up to date in the transaction that records attempt results.
ALTER TABLE webhook_subscriptions
  ADD COLUMN consecutive_failures int NOT NULL DEFAULT 0,
  ADD COLUMN last_success_at timestamptz,
  ADD COLUMN failing_since timestamptz,   -- first failure after the last success (NULL while healthy)
  ADD COLUMN disabled_reason text;        -- set when Bulb disabled it automatically

-- Rotated-out signing secrets: each keeps signing until its own expiry (24 h after its rotation),
-- however many rotations happen meanwhile.
CREATE TABLE webhook_retired_secrets (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  subscription_id bigint NOT NULL REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
  secret          text NOT NULL,
  retired_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at      timestamptz NOT NULL
);
CREATE INDEX webhook_retired_secrets_sub ON webhook_retired_secrets (subscription_id, expires_at);
INSERT INTO webhook_retired_secrets (subscription_id, secret, retired_at, expires_at)
  SELECT id, previous_secret, previous_secret_expires_at - interval '24 hours', previous_secret_expires_at
  FROM webhook_subscriptions WHERE previous_secret IS NOT NULL AND previous_secret_expires_at > clock_timestamp();
ALTER TABLE webhook_subscriptions DROP COLUMN previous_secret, DROP COLUMN previous_secret_expires_at;

-- A manual retry of a pending delivery: where its schedule stood, restored if the manual attempt fails.
ALTER TABLE webhook_deliveries
  ADD COLUMN resume_at timestamptz,
  ADD COLUMN resume_pos int;

-- The console's 24 h chart: attempts per subscription and hour.
CREATE INDEX webhook_attempts_sub_started ON webhook_attempts (subscription_id, started_at);
