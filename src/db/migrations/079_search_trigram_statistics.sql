-- The customer search decides per term whether the trigram index or a budgeted walk in id order answers it
-- (src/crm/customers/store.ts searchRoute; issue 25: no request cost may grow with the data). A term whose trigrams
-- every few customers hold (`mail.gm`, `gmail.com`, `ail.co`: an email domain, a common name) made the index answer
-- most of the table, each candidate read and rechecked for a page (13,500 pages, 1.6 s at 400,000 customers, for none).
-- The planner cannot tell: its estimate of LIKE '%term%' is about the whole term, not the candidates the index gives.
-- These statistics are how often each trigram occurs (pg_trgm's show_trgm of the search text, the trigrams the index
-- holds): ANALYZE (autovacuum's, or Bulb's pass on PGlite) keeps the 1,000 most common with their share of customers
-- (pg_stats_ext_exprs.most_common_elems). Nothing is written per customer; ANALYZE of customers computes the trigrams
-- of its sample (30,000 rows: ~0.5 s more). The statement takes a lock that writers and readers do not wait for.
CREATE STATISTICS IF NOT EXISTS customers_search_trigrams
  ON (show_trgm(customer_search_keys(first_name, last_name, external_id, email_keys))) FROM customers;
ANALYZE customers;
