-- CRM data attached to customers, associates, the merge record and idempotency keys.
-- Every attached table has customer_id with an index (customer_id, id): it serves the per-customer
-- list (ordered by id for cursors) and the merge's UPDATE … WHERE customer_id = ANY(…).

CREATE TABLE associates (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  external_id text NOT NULL UNIQUE,
  first_name  text,
  last_name   text,
  email       text,
  store_id    text,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE orders (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  customer_id bigint NOT NULL REFERENCES customers(id),
  external_id text NOT NULL,
  ordered_at  timestamptz NOT NULL,
  currency    text NOT NULL,
  total       numeric NOT NULL,
  line_items  jsonb NOT NULL DEFAULT '[]',
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX orders_customer ON orders (customer_id, id);

CREATE TABLE follow_ups (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid         uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  customer_id  bigint NOT NULL REFERENCES customers(id),
  associate_id bigint REFERENCES associates(id),
  due_at       timestamptz NOT NULL,
  subject      text NOT NULL,
  status       text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done')),
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX follow_ups_customer ON follow_ups (customer_id, id);

CREATE TABLE notes (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid         uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  customer_id  bigint NOT NULL REFERENCES customers(id),
  associate_id bigint REFERENCES associates(id),
  type         text NOT NULL CHECK (type IN ('note', 'phone', 'optIn', 'video', 'social')),
  body         text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX notes_customer ON notes (customer_id, id);

CREATE TABLE messages (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  customer_id bigint NOT NULL REFERENCES customers(id),
  channel     text NOT NULL CHECK (channel IN ('sms', 'email', 'whatsapp', 'other')),
  direction   text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
  body        text NOT NULL,
  sent_at     timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX messages_customer ON messages (customer_id, id);

CREATE TABLE preferences (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  customer_id bigint NOT NULL REFERENCES customers(id),
  category    text NOT NULL,
  value       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX preferences_customer ON preferences (customer_id, id);

CREATE TABLE product_shares (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid         uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  customer_id  bigint NOT NULL REFERENCES customers(id),
  associate_id bigint REFERENCES associates(id),
  sku          text NOT NULL,
  shared_at    timestamptz NOT NULL,
  message      text,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX product_shares_customer ON product_shares (customer_id, id);

-- One association per (customer, associate); the merge removes duplicates before moving rows.
CREATE TABLE customer_associates (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid         uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  customer_id  bigint NOT NULL REFERENCES customers(id),
  associate_id bigint NOT NULL REFERENCES associates(id),
  role         text,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (customer_id, associate_id)
);
CREATE INDEX customer_associates_customer ON customer_associates (customer_id, id);

-- One row per merge that changed something.
CREATE TABLE merges (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid               uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  primary_id         bigint NOT NULL REFERENCES customers(id),
  secondary_ids      bigint[] NOT NULL,
  moved              jsonb NOT NULL,          -- {"orders": n, "followUps": n, …}
  duplicates_removed integer NOT NULL,
  principal_uuid     uuid,                    -- the API key or auth client that asked
  source             text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX merges_primary ON merges (primary_id, id);
CREATE INDEX merges_secondaries ON merges USING gin (secondary_ids);

-- Idempotency-Key: the first successful answer per (principal, key), replayed for 24 hours.
CREATE TABLE idempotency_keys (
  principal    text NOT NULL,
  key          text NOT NULL,
  request_hash text NOT NULL,
  status       integer NOT NULL,
  body         jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (principal, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
