-- A manual retry (POST …/deliveries/{uuid}/retry) of a delivered or failed delivery whose subscription was already
-- deleted made it pending again, and no worker claims a deleted subscription's deliveries: it stayed pending for
-- ever (listed as pending, and keeping its event from the retention purge). The retry now answers 409
-- (src/webhooks/service.ts); the deliveries it stranded are cancelled here, as deleting the subscription does to its
-- pending ones.
UPDATE webhook_deliveries d
   SET status = 'cancelled', next_attempt_at = NULL, locked_until = NULL, lock_token = NULL, updated_at = clock_timestamp()
  FROM webhook_subscriptions s
 WHERE s.id = d.subscription_id AND s.deleted_at IS NOT NULL AND d.status = 'pending';
