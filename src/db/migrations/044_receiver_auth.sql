-- Receivers behind enterprise security (issue 27 items 2, 3; docs/receiver-auth.md): OAuth2 client credentials
-- (Bulb fetches a bearer token from the subscription's token endpoint) and mutual TLS (a client certificate and key
-- per subscription, and optionally the CA its receiver's certificate must chain to). The client secret and the
-- private key are sealed like every other secret (SPEC §15, src/secrets/store.ts SECRET_COLUMNS).
ALTER TABLE webhook_subscriptions
  ADD COLUMN oauth2_token_url text,
  ADD COLUMN oauth2_client_id text,
  ADD COLUMN oauth2_client_secret text, -- sealed
  ADD COLUMN oauth2_scope text,
  ADD COLUMN oauth2_audience text,
  ADD COLUMN tls_client_certificate text,
  ADD COLUMN tls_client_key text,       -- sealed
  ADD COLUMN tls_ca_certificate text;

ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_auth_method_check;
ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_auth_method_check
  CHECK (auth_method IN ('NONE', 'BASIC', 'BEARER', 'OAUTH2_CLIENT_CREDENTIALS'));

-- OAUTH_TOKEN_FAILED: the token endpoint gave no usable token, so nothing was sent to the receiver.
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_error_code_check;
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_error_code_check
  CHECK (error_code IN ('TIMEOUT', 'CONNECTION', 'DNS', 'TLS', 'HTTP_STATUS', 'BLOCKED_ADDRESS', 'SECRET_UNREADABLE', 'OAUTH_TOKEN_FAILED',
    'BROKER_UNREACHABLE', 'BROKER_REFUSED', 'BROKER_TIMEOUT', 'NO_ROUTE')) NOT VALID;
