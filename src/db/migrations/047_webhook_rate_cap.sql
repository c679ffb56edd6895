-- Rate cap per subscription (issue 26 item 3, docs/delivery-policies.md): at most max_per_second attempts a second
-- across every worker process (NULL: no cap). The claim (CLAIM_SQL in src/webhooks/queue-store.ts) takes send
-- slots from rate_tat, the theoretical time of the next free slot (a token bucket of one token kept as the time it
-- refills: GCRA), in the same statement that leases the deliveries: each claimed delivery gets its own send time,
-- 1/max_per_second after the one before, whichever worker claimed it.
ALTER TABLE webhook_subscriptions
  ADD COLUMN max_per_second int,
  ADD COLUMN rate_tat timestamptz;
ALTER TABLE webhook_subscriptions
  ADD CONSTRAINT webhook_subscriptions_max_per_second CHECK (max_per_second IS NULL OR max_per_second BETWEEN 1 AND 10000);
