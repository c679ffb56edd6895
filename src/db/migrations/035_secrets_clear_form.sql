-- Secret columns hold either a sealed value ("v1:<keyid>:<nonce>:<ciphertext>") or clear text. Clear text is now
-- written behind "clear:" (plaintext mode, src/secrets/box.ts), because a credential may itself look sealed: stored
-- bare, it was read as a value sealed under an unknown key (500 on create, every claim failing, start refused).
-- Clear values written before this migration stay bare and are read as clear, except the ambiguous ones, marked
-- here: a bearer token or basic password that looks sealed, or that starts with "clear:", in a row written in clear.
-- A row's secrets are sealed together (on write, and all at once by the first start with a key), so a row whose
-- signing secret (always "whsec_…" in clear) is not sealed holds nothing sealed.
UPDATE webhook_subscriptions SET
  bearer_token = CASE WHEN bearer_token ~ '^v1:[0-9a-f]{16}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22,}$' OR bearer_token LIKE 'clear:%'
    THEN 'clear:' || bearer_token ELSE bearer_token END,
  basic_password = CASE WHEN basic_password ~ '^v1:[0-9a-f]{16}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22,}$' OR basic_password LIKE 'clear:%'
    THEN 'clear:' || basic_password ELSE basic_password END
WHERE signing_secret !~ '^v1:[0-9a-f]{16}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22,}$'
  AND (bearer_token ~ '^v1:' OR bearer_token LIKE 'clear:%' OR basic_password ~ '^v1:' OR basic_password LIKE 'clear:%');

-- A stored secret that cannot be opened (sealed under a key this worker lacks, or altered) fails that subscription's
-- attempts with this error code, instead of the claim of every subscription. The check only widens, so the rows
-- already there satisfy it: NOT VALID skips re-reading the table.
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_error_code_check;
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_error_code_check
  CHECK (error_code IN ('TIMEOUT', 'CONNECTION', 'DNS', 'TLS', 'HTTP_STATUS', 'BLOCKED_ADDRESS', 'SECRET_UNREADABLE')) NOT VALID;
