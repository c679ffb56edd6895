-- A manual retry (POST …/deliveries/{uuid}/retry) attempts that delivery now, even while its subscription is paused by a
-- receiver's Retry-After: the claim takes such a delivery from a paused subscription, and only such deliveries, so the
-- pause still holds the rest of the backlog. Until this migration the retry lifted the pause and made every delivery
-- the pause had deferred due now; the claim took the oldest, which met the next 429 and paused the subscription again,
-- and the delivery asked for was not attempted (a probe). Set by the retry, cleared by the result of the delivery's
-- next attempt (docs/delivery.md, "Manual retry"). A constant default: no rewrite of the table.
ALTER TABLE webhook_deliveries ADD COLUMN manual_retry boolean NOT NULL DEFAULT false;
