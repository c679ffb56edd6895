-- Core: API keys, OAuth clients and tokens, customers, and the events outbox.

CREATE TABLE api_keys (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  prefix      text NOT NULL,                 -- first characters of the key, to recognise it in lists
  secret_hash bytea NOT NULL UNIQUE,         -- sha256 of the whole key; the key itself is never stored
  name        text NOT NULL,
  scopes      text[] NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at  timestamptz
);

CREATE TABLE auth_clients (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  client_id   text NOT NULL UNIQUE,
  secret_hash bytea NOT NULL,
  name        text NOT NULL,
  scopes      text[] NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);

CREATE TABLE oauth_tokens (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  secret_hash bytea NOT NULL UNIQUE,
  client_id   bigint NOT NULL REFERENCES auth_clients(id) ON DELETE CASCADE,
  scopes      text[] NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

CREATE TABLE customers (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid            uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  external_id     text NOT NULL UNIQUE,
  status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  first_name      text,
  last_name       text,
  emails          jsonb NOT NULL DEFAULT '[]',
  phones          jsonb NOT NULL DEFAULT '[]',
  addresses       jsonb NOT NULL DEFAULT '[]',
  social_profiles jsonb NOT NULL DEFAULT '[]',
  loyalty_tier    text,
  email_keys      text[] NOT NULL DEFAULT '{}',   -- lower-cased emails, for the email filter
  merged_into     bigint REFERENCES customers(id),
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX customers_email_keys ON customers USING gin (email_keys);
CREATE INDEX customers_status_id ON customers (status, id);
CREATE INDEX customers_updated ON customers (updated_at, id);
CREATE INDEX customers_merged_into ON customers (merged_into) WHERE merged_into IS NOT NULL;

-- The transactional outbox: one row per occurrence, written in the transaction of the change.
CREATE TABLE events (
  id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid                 uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  event_type           text NOT NULL,
  resource_type        text NOT NULL,
  resource_uuid        uuid NOT NULL,
  resource_external_id text,
  source               text NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX events_created ON events (created_at);
