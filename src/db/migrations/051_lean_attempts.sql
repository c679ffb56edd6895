-- Lean attempt rows (issue 25 item 3; docs/delivery.md "What an attempt row holds"). An attempt row stored its request
-- whole (~700 of its ~940 bytes): the body is its event's, and the headers are its subscription's but for the four the
-- attempt signs. A new attempt stores only those four values' own part (the signatures, and the timestamp when it is
-- not its start's second) and the version of its subscription's sending config it used; the logs API rebuilds the
-- URL, headers and body from that version and the event (src/webhooks/attempt-request.ts).

-- One row per distinct sending config of a subscription, as the workers sent it: its URL, its webhookVersion, the
-- name of the hex HMAC header, and every logged header (credentials redacted) but the four an attempt signs. Rows
-- are never changed: a subscription changed afterwards gets a new version, so its old attempts read as they were
-- sent. Written by the workers on first use of a config (content-addressed by `digest`, src/webhooks/versions-store.ts).
CREATE TABLE webhook_subscription_versions (
  id              int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  subscription_id bigint NOT NULL REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
  digest          text NOT NULL,
  url             text NOT NULL,
  webhook_version text NOT NULL,
  hmac_header     text NOT NULL,
  headers         jsonb NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (subscription_id, digest)
);

-- Metadata only (no rewrite, no scan: a short lock): rows written before keep what they hold and read as before. New
-- rows leave null: url, request_headers, request_body (rebuilt), event_id (the delivery's), and uuid: an attempt's
-- uuid is rebuilt from its id (ATTEMPT_UUID_SQL in src/webhooks/store.ts; nothing looks an attempt up by uuid), which
-- spares 16 bytes in the row and an entry of ~33 bytes in webhook_attempts_uuid_key (a null is deduplicated there).
ALTER TABLE webhook_attempts
  ALTER COLUMN url DROP NOT NULL,
  ALTER COLUMN request_headers DROP NOT NULL,
  ALTER COLUMN request_body DROP NOT NULL,
  ALTER COLUMN event_id DROP NOT NULL,
  ALTER COLUMN uuid DROP NOT NULL,
  -- The sending config the attempt used (no foreign key: the attempt's delivery's already cascades from its subscription).
  ADD COLUMN version_id int,
  -- The hex HMAC (32 bytes), then each Standard Webhooks v1 signature (32 bytes each); null: nothing was signed
  -- (SECRET_UNREADABLE, OAUTH_TOKEN_FAILED): the request's headers were empty.
  ADD COLUMN signatures bytea,
  -- webhook-timestamp minus the second of started_at (null: 0, the usual case).
  ADD COLUMN timestamp_skew int;
