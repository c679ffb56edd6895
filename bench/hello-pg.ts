// A second, database-backed baseline: Fastify plus a node-postgres pool of the same size as Bulb's, each
// GET answering one customer looked up by uuid with a single indexed SELECT (no auth, no versioning).
// It shows what the machine's PostgreSQL allows, so Bulb's own overhead can be told apart from the database's.
import Fastify from 'fastify';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
pool.on('error', () => {});
const app = Fastify({ logger: false });
app.get('/customers/:uuid', async (req, reply) => {
  const r = await pool.query('SELECT uuid, external_id, first_name, last_name, emails, phones, addresses, created_at, updated_at FROM customers WHERE uuid = $1', [(req.params as any).uuid]);
  if (!r.rows[0]) return reply.code(404).send({ error: 'not found' });
  return r.rows[0];
});
const addr = await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`hello-pg listening on ${new URL(addr).port}`);
process.on('SIGTERM', () => void app.close().then(() => pool.end()).then(() => process.exit(0)));
