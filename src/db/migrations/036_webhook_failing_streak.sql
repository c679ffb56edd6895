-- A subscription is disabled after failing *for* BULB_WEBHOOK_DISABLE_AFTER_HOURS: its current failing streak began
-- that long ago and no silence of that length broke it (docs/webhook-retries.md). The time of its latest failed
-- attempt tells a continuing streak from a new one: a failure that long or longer after the previous one starts a
-- new streak (failing_since is then that failure), where one old failure and one new used to disable it at once.
ALTER TABLE webhook_subscriptions ADD COLUMN last_failure_at timestamptz;
-- Failing subscriptions (a handful): their latest failed attempt still kept, else the start of their streak.
UPDATE webhook_subscriptions s SET last_failure_at = coalesce(
  (SELECT a.started_at FROM webhook_attempts a WHERE a.subscription_id = s.id AND a.outcome = 'failure' ORDER BY a.id DESC LIMIT 1),
  s.failing_since)
WHERE s.failing_since IS NOT NULL;
