// What the Fastify + pg floors share: node-postgres returning timestamps and bigints as text (as Bulb's driver
// setup does), a pool of Bulb's size, a Fastify app without logging, the Customer wire shape, and the start.
import Fastify from 'fastify';
import pg from 'pg';

pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (v) => v);
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => v);
export const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
pool.on('error', () => {});
export const app = Fastify({ logger: false });

/** PostgreSQL's timestamptz text → ISO 8601, as Bulb answers it. */
export const iso = (v: string | null) => (v === null ? null : new Date(v.replace(' ', 'T').replace(/\+00$/, 'Z')).toISOString());

/** The columns of a customer row with its merged-into customer (aliases c and m), in Bulb's page SELECT. */
export const CUSTOMER_COLS = `c.id, c.uuid, c.external_id, c.status, c.first_name, c.last_name, c.emails, c.phones, c.addresses,
  c.social_profiles, c.loyalty_tier, m.uuid AS merged_into_uuid, m.external_id AS merged_into_external_id, c.created_at, c.updated_at`;

/** A row of CUSTOMER_COLS as Bulb's Customer. */
export const customerShape = (r: any) => ({
  uuid: r.uuid, externalId: r.external_id, status: r.status, firstName: r.first_name, lastName: r.last_name,
  emails: r.emails, phones: r.phones, addresses: r.addresses, socialProfiles: r.social_profiles, loyaltyTier: r.loyalty_tier,
  mergedInto: r.merged_into_uuid ? { uuid: r.merged_into_uuid, externalId: r.merged_into_external_id } : null,
  createdAt: iso(r.created_at), updatedAt: iso(r.updated_at),
});

/** Listens on a free loopback port and prints `<name> listening on <port>` (what the bench waits for). */
export async function listen(name: string): Promise<void> {
  const addr = await app.listen({ port: 0, host: '127.0.0.1' });
  console.log(`${name} listening on ${new URL(addr).port}`);
  process.on('SIGTERM', () => void app.close().then(() => pool.end()).then(() => process.exit(0)));
}
