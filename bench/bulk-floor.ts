// The bulk floor: hand-written SQL writing what POST /crm/customers/bulk writes for 100 new customers —
// the customers, one customerCreate event each and one delivery per active customerCreate subscription,
// plus the NOTIFY — as ONE statement per transaction of 100, from `concurrency` connections in parallel.
// Bulb's bulk of 100 is measured against this rate (customers/s).
//   DATABASE_URL=postgres://… node --import tsx bench/bulk-floor.ts [seconds] [concurrency]
// (the database must be migrated; create the subscriptions first to include deliveries).
import pg from 'pg';
import { customerBody } from './lib.ts';

const SQL = `WITH c AS (
    INSERT INTO customers (external_id, first_name, last_name, emails, phones, addresses, social_profiles, loyalty_tier, email_keys)
    SELECT x.external_id, x.first_name, x.last_name, x.emails, x.phones, x.addresses, x.social_profiles, x.loyalty_tier,
           ARRAY(SELECT lower(e->>'email') FROM jsonb_array_elements(x.emails) e)
      FROM jsonb_to_recordset($1::jsonb) AS x(external_id text, first_name text, last_name text, emails jsonb, phones jsonb,
           addresses jsonb, social_profiles jsonb, loyalty_tier text)
    ON CONFLICT (external_id) DO NOTHING
    RETURNING id, uuid, external_id
  ), ev AS (
    INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
    SELECT 'customerCreate', 'Customer', c.uuid, c.external_id, 'FLOOR' FROM c ORDER BY c.id RETURNING id
  ), d AS (
    INSERT INTO webhook_deliveries (event_id, subscription_id)
    SELECT ev.id, s.id FROM ev, webhook_subscriptions s WHERE s.event_types @> ARRAY['customerCreate'] AND s.is_active AND s.deleted_at IS NULL
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM c) AS customers, (SELECT count(*) FROM d) AS deliveries, pg_notify('bulb_webhooks', '')`;

export interface BulkFloorResult {
  customersPerSec: number;
  customers: number;
  deliveries: number;
  seconds: number;
}

/** Writes batches of 100 new customers for `seconds` from `concurrency` connections; returns the rate. */
export async function runBulkFloor(url: string, seconds: number, concurrency = 4, prefix = `floor-${process.pid}-${Date.now()}`): Promise<BulkFloorResult> {
  const pool = new pg.Pool({ connectionString: url, max: concurrency });
  pool.on('error', () => {});
  let customers = 0;
  let deliveries = 0;
  let n = 0;
  const batch = () =>
    JSON.stringify(Array.from({ length: 100 }, () => {
      const b = customerBody(`${prefix}-${n++}`);
      return { external_id: b.externalId, first_name: b.firstName, last_name: b.lastName, emails: b.emails, phones: b.phones, addresses: b.addresses, social_profiles: [], loyalty_tier: b.loyaltyTier };
    }));
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const r = await pool.query(SQL, [batch()]);
      customers += Number(r.rows[0].customers);
      deliveries += Number(r.rows[0].deliveries);
    }
  }));
  const took = (performance.now() - t0) / 1000;
  await pool.end();
  return { customersPerSec: customers / took, customers, deliveries, seconds: took };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('set DATABASE_URL to a migrated Bulb database');
  const r = await runBulkFloor(url, Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 4));
  console.log(JSON.stringify(r));
}
