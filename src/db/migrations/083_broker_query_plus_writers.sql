-- Migration 080 made a "+" in an AMQP URL's query a plus (percent-decoding only) and rewrote the URLs stored before it
-- with %20, the space they meant. During a rolling upgrade (docs/operations.md) processes of the release before still
-- run after the migrations, and they read and write a "+" there as a space (URLSearchParams): a subscription an older
-- API process wrote with a literal "+" after 080 was published to "a b" by the older workers and to "a+b" by the newer
-- ones, and one a newer API process wrote was published by the older workers to the space (an upgrade probe,
-- 2026-11-30). So this release stores a plus as %2B (splitCredential), which both releases read as a plus, and this
-- trigger writes a literal "+" that an older process writes as %20, the space it meant. A later release drops it,
-- once no process older than 080 can run against the database.
CREATE FUNCTION webhook_url_plus_as_space() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.url ~* '^amqps?://[^?]*\?.*\+' THEN
    NEW.url := split_part(NEW.url, '?', 1) || '?' || replace(substr(NEW.url, strpos(NEW.url, '?') + 1), '+', '%20');
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER webhook_url_plus_as_space BEFORE INSERT OR UPDATE OF url ON webhook_subscriptions
  FOR EACH ROW EXECUTE FUNCTION webhook_url_plus_as_space();
