-- Possible duplicates: 076's re-queue, completed. The fold keeps a zero-width space (U+200B) as a word break after
-- all (Thai, Khmer, Lao and Burmese separate words with it: 076's fold lost their pairs), and drops the other format
-- characters wherever they are folded: names, streets and cities (076 looked at names only, and at 19 of them). The
-- active customers whose name or addresses hold one go back on the refresher's queue (again, for those 076 queued).
INSERT INTO duplicate_dirty (customer_id)
SELECT id FROM customers
WHERE status = 'active'
  AND (coalesce(first_name, '') || coalesce(last_name, '') || addresses::text)
    ~ '[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]'
ORDER BY id
ON CONFLICT (customer_id) DO NOTHING;
