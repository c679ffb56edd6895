-- Until 2026-11-30 a broker URL's query was form-decoded (URLSearchParams): a "+" in an AMQP exchange or routing key
-- was sent as a space. Since then it is percent-decoded only, as AMQP URIs are (src/webhooks/destinations/url.ts,
-- queryParams): a "+" is a plus. An AMQP URL stored before keeps what it meant: each "+" of its query is written %20.
-- A NATS subject holds no space, so one written with a "+" was refused then: none is stored. The sending configs
-- recorded for the logs keep the URL they were sent with (history).
UPDATE webhook_subscriptions
SET url = split_part(url, '?', 1) || '?' || replace(substr(url, strpos(url, '?') + 1), '+', '%20')
WHERE url ~* '^amqps?://[^?]*\?.*\+';
