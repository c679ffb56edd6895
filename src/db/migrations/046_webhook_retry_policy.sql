-- Retry policy per subscription (issue 26 item 1, docs/delivery-policies.md): its own schedule (1–20 delays in
-- seconds, each 1 s–24 h, at most 7 days in all; NULL: the service's BULB_WEBHOOK_RETRY_SCHEDULE) and jitter
-- (0–50 %: each delay is drawn from [d·(1−j), d·(1+j)]). Read when a failed attempt's next attempt is scheduled
-- (recordResults in src/webhooks/queue-store.ts), so a change applies to the next retry of pending deliveries.
ALTER TABLE webhook_subscriptions
  ADD COLUMN retry_schedule int[],
  ADD COLUMN retry_jitter int NOT NULL DEFAULT 0;
ALTER TABLE webhook_subscriptions
  ADD CONSTRAINT webhook_subscriptions_retry_schedule CHECK (retry_schedule IS NULL OR (
    cardinality(retry_schedule) BETWEEN 1 AND 20 AND array_position(retry_schedule, NULL) IS NULL
    AND 1 <= ALL (retry_schedule) AND 86400 >= ALL (retry_schedule))),  -- the 7-day total: src/webhooks/policy.ts
  ADD CONSTRAINT webhook_subscriptions_retry_jitter CHECK (retry_jitter BETWEEN 0 AND 50);
