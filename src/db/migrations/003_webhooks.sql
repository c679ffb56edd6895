-- Webhooks: subscriptions, one delivery row per (event, subscription) — the queue itself — and one row per attempt.

CREATE TABLE webhook_subscriptions (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid            uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  url             text NOT NULL,
  event_type      text NOT NULL,
  is_active       boolean NOT NULL DEFAULT true,
  auth_method     text NOT NULL DEFAULT 'NONE' CHECK (auth_method IN ('NONE', 'BASIC', 'BEARER')),
  bearer_token    text,          -- write-only on the API; needed in clear to send
  basic_username  text,
  basic_password  text,
  webhook_version text NOT NULL DEFAULT '2022-08',
  signing_secret  text NOT NULL, -- whsec_<base64 32 bytes>; needed in clear to sign
  previous_secret text,          -- still signs until previous_secret_expires_at (rotation)
  previous_secret_expires_at timestamptz,
  max_in_flight   int NOT NULL DEFAULT 16,
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  deleted_at      timestamptz    -- soft delete: logs keep naming the subscription
);
-- Fan-out looks subscriptions up by type on every event write.
CREATE INDEX webhook_subscriptions_type ON webhook_subscriptions (event_type) WHERE is_active AND deleted_at IS NULL;

CREATE TABLE webhook_deliveries (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid            uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  event_id        bigint NOT NULL REFERENCES events(id) ON DELETE CASCADE,
  subscription_id bigint NOT NULL REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'cancelled')),
  attempt_count   int NOT NULL DEFAULT 0,
  schedule_pos    int NOT NULL DEFAULT 0,      -- index into the retry schedule for the next failure
  next_attempt_at timestamptz DEFAULT clock_timestamp(), -- NULL unless pending
  locked_until    timestamptz,                 -- lease of the worker attempting it now
  lock_token      uuid,                        -- which claim holds the lease
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  delivered_at    timestamptz
);
-- The claim: due pending deliveries of one subscription, oldest first.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (subscription_id, next_attempt_at, id) WHERE status = 'pending';
-- In-flight count per subscription (the per-endpoint cap).
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (subscription_id, locked_until) WHERE status = 'pending' AND locked_until IS NOT NULL;
CREATE INDEX webhook_deliveries_status ON webhook_deliveries (status, id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

CREATE TABLE webhook_attempts (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid            uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  delivery_id     bigint NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  subscription_id bigint NOT NULL REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
  event_id        bigint NOT NULL REFERENCES events(id) ON DELETE CASCADE,
  attempt_number  int NOT NULL,
  url             text NOT NULL,
  started_at      timestamptz NOT NULL,
  duration_ms     int NOT NULL,
  status_code     int,
  error_code      text CHECK (error_code IN ('TIMEOUT', 'CONNECTION', 'DNS', 'TLS', 'HTTP_STATUS', 'BLOCKED_ADDRESS')),
  outcome         text NOT NULL CHECK (outcome IN ('success', 'failure')),
  next_attempt_at timestamptz,
  request_headers jsonb NOT NULL,  -- credentials already redacted
  request_body    text NOT NULL,
  response_body   text
);
CREATE INDEX webhook_attempts_started ON webhook_attempts (started_at);
CREATE INDEX webhook_attempts_sub ON webhook_attempts (subscription_id, id);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id);
-- The dispatcher's timer: the next future due time.
CREATE INDEX webhook_deliveries_next ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
