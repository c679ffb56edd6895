-- Broker URLs written with an upper-case scheme (AMQP://, NATS://) before 2026-11-29 were stored as typed, their
-- password in clear in `url` (and so in the API's answers, and in the sending config the workers recorded for the
-- logs); since then such a URL is stored as every broker URL is (splitCredential): the scheme lower-cased, the
-- password in `destination_password` (sealed at start by prepareSecrets, which seals clear text left by an older Bulb)
-- and REDACTED_PASSWORD (***) in its place. This puts the rows stored before in that shape. The authority ends at the
-- first "/", "?" or "#"; its user information at its last "@" (the URL parser's rule); the password after the first
-- ":" of that, as written (percent-encoded, as splitCredential keeps it).
WITH parsed AS (
  SELECT s.id, m[1] AS scheme, m[2] AS userinfo, m[3] AS rest,
         substring(m[2] FROM '^([^:]*):') AS username, substring(m[2] FROM '^[^:]*:(.*)$') AS password
  FROM webhook_subscriptions s, regexp_match(s.url, '^([A-Za-z]+)://(?:([^/?#]*)@)?(.*)$') AS m
  WHERE s.url ~* '^(amqps?|nats)://' AND (s.url !~ '^(amqps?|nats)://' OR m[2] ~ ':(?!\*\*\*$).')
)
UPDATE webhook_subscriptions s
SET url = lower(p.scheme) || '://'
          || CASE WHEN p.userinfo IS NULL THEN ''
                  WHEN coalesce(p.password, '') IN ('', '***') THEN p.userinfo || '@'
                  ELSE p.username || ':***@' END
          || p.rest,
    destination_password = CASE WHEN coalesce(p.password, '') IN ('', '***') THEN s.destination_password
                                ELSE coalesce(s.destination_password, p.password) END
FROM parsed p
WHERE s.id = p.id;

-- The sending configs recorded with such a URL keep their history, the password aside.
UPDATE webhook_subscription_versions
SET url = regexp_replace(url, '^([A-Za-z]+://[^/?#:]*):[^/?#]*@', '\1:***@')
WHERE url ~* '^(amqps?|nats)://' AND substring(url FROM '^[A-Za-z]+://[^/?#:]*:([^/?#]*)@') NOT IN ('', '***');
