// The database-backed floors: Fastify plus a node-postgres pool of the same size as Bulb's, no auth, no
// versioning, each route hand-written SQL in one round trip:
//   GET  /customers/:uuid  one indexed SELECT by uuid (the GET-by-id floor)
//   GET  /customers        the same SELECT as Bulb's page of 50 (active customers in id order, merged-into join),
//                          each row serialised into the same wire shape (timestamps as ISO strings)
//   POST /customers        one transaction inserting the customer, its customerCreate event and one delivery per
//                          active subscription (3 in the bench), written as one statement (the create floor)
// It shows what the machine's PostgreSQL allows, so Bulb's own overhead can be told apart from the database's.
import { CUSTOMER_COLS, app, customerShape, listen, pool } from './floor-common.ts';

app.get('/customers/:uuid', async (req, reply) => {
  const r = await pool.query('SELECT uuid, external_id, first_name, last_name, emails, phones, addresses, created_at, updated_at FROM customers WHERE uuid = $1', [(req.params as any).uuid]);
  if (!r.rows[0]) return reply.code(404).send({ error: 'not found' });
  return r.rows[0];
});

app.get('/customers', async () => {
  const r = await pool.query(`SELECT ${CUSTOMER_COLS} FROM customers c LEFT JOIN customers m ON m.id = c.merged_into WHERE c.status = $1 ORDER BY c.id LIMIT $2`, ['active', 51]);
  const more = r.rows.length > 50;
  const page = r.rows.slice(0, 50);
  return { data: page.map(customerShape), nextCursor: more ? Buffer.from(`c1:${page[49].id}`).toString('base64url') : null };
});

app.post('/customers', async (req, reply) => {
  const b = req.body as any;
  const emails = b.emails ?? [];
  const r = await pool.query(
    `WITH c AS (
       INSERT INTO customers (external_id, first_name, last_name, emails, phones, addresses, social_profiles, loyalty_tier, email_keys)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *
     ), ev AS (
       INSERT INTO events (event_type, resource_type, resource_uuid, resource_external_id, source)
       SELECT 'customerCreate', 'Customer', c.uuid, c.external_id, 'FLOOR' FROM c RETURNING id
     ), d AS (
       INSERT INTO webhook_deliveries (event_id, subscription_id)
       SELECT ev.id, s.id FROM ev, webhook_subscriptions s WHERE s.event_types @> ARRAY['customerCreate'] AND s.is_active AND s.deleted_at IS NULL
     )
     SELECT c.*, NULL AS merged_into_uuid, NULL AS merged_into_external_id, pg_notify('bulb_webhooks', '') FROM c`,
    [b.externalId, b.firstName ?? null, b.lastName ?? null, JSON.stringify(emails), JSON.stringify(b.phones ?? []), JSON.stringify(b.addresses ?? []),
      JSON.stringify(b.socialProfiles ?? []), b.loyaltyTier ?? null, emails.map((e: any) => String(e.email).toLowerCase())],
  );
  reply.code(201);
  return customerShape(r.rows[0]);
});

await listen('hello-pg');
