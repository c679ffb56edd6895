-- Possible duplicates: a name's format characters (zero-width space and joiners, soft hyphen, bidi marks) are dropped
-- by the fold instead of breaking a word, and a phone number is read after NFKC (a full-width "＋８１…" was read with a
-- US country code): src/crm/duplicates/normalize.ts. The active customers whose profile or keys can change by that
-- go back on the refresher's queue (as 024 did for its fold); the others keep theirs.
INSERT INTO duplicate_dirty (customer_id)
SELECT id FROM customers
WHERE status = 'active'
  AND ((coalesce(first_name, '') || coalesce(last_name, '')) ~ '[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]'
    OR phones::text ~ '[\uff01-\uff5e]')
ORDER BY id
ON CONFLICT (customer_id) DO NOTHING;
