// The customer-lookup floor: Fastify plus a node-postgres pool of Bulb's size, no auth, no versioning, one
// hand-written query per request (unnamed, so PostgreSQL plans it for the value given), each row serialised like
// Bulb's Customer (bench/hello-pg.ts's shape):
//   GET /customers?email=        the active customers holding that email: ids from the GIN index, rows by id
//   GET /customers?updatedSince= the active customers changed since then, in id order: the changed ones' ids from
//                                the (updated_at, id) index, rows by id (the email form). Written plainly
//                                (`WHERE updated_at >= $1 … ORDER BY id LIMIT 51`), PostgreSQL walks the primary key
//                                when few changed (it guesses hundreds); `&plain=1` runs that form, for the note.
// `DATABASE_URL=… node --import tsx bench/lookups-floor.ts`.
import Fastify from 'fastify';
import pg from 'pg';

pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (v) => v);
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => v);
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
pool.on('error', () => {});
const app = Fastify({ logger: false });

const iso = (v: string | null) => (v === null ? null : new Date(v.replace(' ', 'T').replace(/\+00$/, 'Z')).toISOString());
const shape = (r: any) => ({
  uuid: r.uuid, externalId: r.external_id, status: r.status, firstName: r.first_name, lastName: r.last_name,
  emails: r.emails, phones: r.phones, addresses: r.addresses, socialProfiles: r.social_profiles, loyaltyTier: r.loyalty_tier,
  mergedInto: r.merged_into_uuid ? { uuid: r.merged_into_uuid, externalId: r.merged_into_external_id } : null,
  createdAt: iso(r.created_at), updatedAt: iso(r.updated_at),
});
const SELECT = `SELECT c.id, c.uuid, c.external_id, c.status, c.first_name, c.last_name, c.emails, c.phones, c.addresses,
  c.social_profiles, c.loyalty_tier, m.uuid AS merged_into_uuid, m.external_id AS merged_into_external_id, c.created_at, c.updated_at
  FROM customers c LEFT JOIN customers m ON m.id = c.merged_into`;

app.get('/customers', async (req, reply) => {
  const q = req.query as { email?: string; updatedSince?: string; plain?: string };
  const r =
    q.email !== undefined
      ? await pool.query(`${SELECT} WHERE c.id = ANY (ARRAY(SELECT id FROM customers WHERE email_keys @> ARRAY[$1])) AND c.status = 'active' ORDER BY c.id LIMIT 51`, [q.email.toLowerCase()])
      : q.updatedSince !== undefined && q.plain
        ? await pool.query(`${SELECT} WHERE c.updated_at >= $1 AND c.status = 'active' ORDER BY c.id LIMIT 51`, [q.updatedSince])
        : q.updatedSince !== undefined
          ? await pool.query(`${SELECT} WHERE c.id = ANY (ARRAY(SELECT id FROM customers WHERE updated_at >= $1)) AND c.status = 'active' ORDER BY c.id LIMIT 51`, [q.updatedSince])
          : null;
  if (!r) return reply.code(400).send({ error: 'email or updatedSince' });
  const page = r.rows.slice(0, 50);
  return { data: page.map(shape), nextCursor: r.rows.length > 50 ? Buffer.from(`c1:${page[49].id}`).toString('base64url') : null };
});

const addr = await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`lookups-floor listening on ${new URL(addr).port}`);
process.on('SIGTERM', () => void app.close().then(() => pool.end()).then(() => process.exit(0)));
