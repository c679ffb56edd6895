-- The webhook stats' hourly rollup (GET …/webhooks/stats, docs/delivery.md "Stats"): attempts and successes per
-- hour and subscription, for the hours the job `webhook stats rollup` (src/webhooks/stats-rollup.ts) has rolled up,
-- so that a request reads at most 168 rows per subscription plus the attempts of the hours not rolled up yet,
-- whatever the number of attempts. New tables only: no row of webhook_attempts is read here (the job fills them).
CREATE TABLE IF NOT EXISTS webhook_attempt_hours (
  hour            timestamptz NOT NULL,
  -- No foreign key: the stats join live subscriptions anyway, and the rows go after 169 hours.
  subscription_id bigint NOT NULL,
  attempts        int NOT NULL,
  successes       int NOT NULL,
  PRIMARY KEY (hour, subscription_id)
);
-- What the rollup holds: every hour in [rolled_from, rolled_until) (null: nothing rolled up yet). One row, locked by
-- the pass that moves it (two workers' passes never roll at once; the second skips).
CREATE TABLE IF NOT EXISTS webhook_attempt_hours_rolled (
  one          boolean PRIMARY KEY DEFAULT true CHECK (one),
  rolled_from  timestamptz,
  rolled_until timestamptz
);
INSERT INTO webhook_attempt_hours_rolled (one) VALUES (true) ON CONFLICT (one) DO NOTHING;
