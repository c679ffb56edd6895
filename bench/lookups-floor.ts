// The customer-lookup floor: Fastify plus a node-postgres pool of Bulb's size, no auth, no versioning, one
// hand-written query per request (unnamed, so PostgreSQL plans it for the value given), each row serialised like
// Bulb's Customer (bench/hello-pg.ts's shape):
//   GET /customers?email=        the active customers holding that email: ids from the GIN index, rows by id
//   GET /customers?updatedSince= the active customers changed since then, in id order: the changed ones' ids from
//                                the (updated_at, id) index, rows by id (the email form). Written plainly
//                                (`WHERE updated_at >= $1 … ORDER BY id LIMIT 51`), PostgreSQL walks the primary key
//                                when few changed (it guesses hundreds); `&plain=1` runs that form, for the note.
// `DATABASE_URL=… node --import tsx bench/lookups-floor.ts`.
import { CUSTOMER_COLS, app, customerShape, listen, pool } from './floor-common.ts';

const SELECT = `SELECT ${CUSTOMER_COLS} FROM customers c LEFT JOIN customers m ON m.id = c.merged_into`;

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
  return { data: page.map(customerShape), nextCursor: r.rows.length > 50 ? Buffer.from(`c1:${page[49].id}`).toString('base64url') : null };
});

await listen('lookups-floor');
