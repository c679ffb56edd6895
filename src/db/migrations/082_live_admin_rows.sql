-- bulb:outside-transaction (see src/db/migrate.ts: the indexes are built while the tables go on being written)
-- The admin lists of API keys, OAuth clients and webhook subscriptions show the live rows only, in id order; revoked
-- keys and clients and deleted subscriptions stay in their tables (an integration that rotates its key every day, a
-- platform that makes and deletes a subscription per campaign). No index held the live rows, so each page read every
-- row ever made (a probe, 2026-11-30: 962 → 3,964 pages for the keys at 50,000 → 200,000 revoked, 3,040 → 6,733 for
-- the subscriptions). These hold the live ones, in the lists' order.
CREATE INDEX CONCURRENTLY IF NOT EXISTS api_keys_live ON api_keys (id) WHERE revoked_at IS NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS auth_clients_live ON auth_clients (id) WHERE revoked_at IS NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_subscriptions_live ON webhook_subscriptions (id) WHERE deleted_at IS NULL;
