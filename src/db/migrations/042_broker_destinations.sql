-- Broker destinations (docs/destinations.md): a subscription URL may be amqp(s):// or nats://. Its password is split
-- off and sealed here like every other secret (SPEC §15); the url column keeps the URL with the password shown as ***.
ALTER TABLE webhook_subscriptions ADD COLUMN destination_password text;

-- A publish's outcomes (statusCode null): BROKER_UNREACHABLE, BROKER_REFUSED, BROKER_TIMEOUT, NO_ROUTE. The check only
-- widens, so the rows already there satisfy it: NOT VALID skips re-reading the table.
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_error_code_check;
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_error_code_check
  CHECK (error_code IN ('TIMEOUT', 'CONNECTION', 'DNS', 'TLS', 'HTTP_STATUS', 'BLOCKED_ADDRESS', 'SECRET_UNREADABLE',
    'BROKER_UNREACHABLE', 'BROKER_REFUSED', 'BROKER_TIMEOUT', 'NO_ROUTE')) NOT VALID;
