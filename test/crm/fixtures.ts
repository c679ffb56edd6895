// SQL fixtures for merge tests: customers with attached rows of every kind, counts and snapshots.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../src/db/db.ts';

export const ATTACHED_TABLES = ['orders', 'follow_ups', 'notes', 'messages', 'preferences', 'product_shares', 'customer_associates'] as const;
export const NOTE_TYPES = ['CUSTOMER_NOTE', 'CUSTOMER_PHONE_LOG', 'CUSTOMER_OPTIN_LOG', 'CUSTOMER_VIDEO_LOG', 'CUSTOMER_SOCIAL_LOG'];

export interface Made {
  id: string;
  uuid: string;
  externalId: string;
}

export async function makeCustomer(db: Queryable, externalId: string, extra: { email?: string; loyaltyTier?: string } = {}): Promise<Made> {
  const emails = extra.email ? [{ email: extra.email, type: 'home', isPrimary: true }] : [];
  const r = await db.query<{ id: string; uuid: string }>(
    `INSERT INTO customers (external_id, emails, phones, addresses, social_profiles, loyalty_tier, email_keys)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, uuid`,
    [
      externalId,
      JSON.stringify(emails),
      JSON.stringify(extra.email ? [{ number: '+33100000000', type: 'mobile', isPrimary: true }] : []),
      JSON.stringify(extra.email ? [{
        uuid: randomUUID(), externalId: null, address1: '1 rue X', address2: null, city: 'Paris', countryCode: 'FR', zoneCode: null, postCode: null,
        firstName: null, lastName: null, phone: null, emailAddress: null, type: null, disabled: false, isPrimary: true,
      }] : []),
      JSON.stringify(extra.email ? [{ network: 'instagram', handle: externalId }] : []),
      extra.loyaltyTier ?? null,
      emails.map((e) => e.email.toLowerCase()),
    ],
  );
  return { ...r.rows[0], externalId };
}

export async function makeAssociate(db: Queryable, externalId: string): Promise<string> {
  return (await db.query<{ id: string }>('INSERT INTO associates (external_id) VALUES ($1) RETURNING id', [externalId])).rows[0].id;
}

/** n rows of each kind (notes: n of each of the five types) and one association per associate. */
export async function attach(db: Queryable, customerId: string, n: number, associateIds: string[] = [], role = 'stylist'): Promise<void> {
  const c = customerId;
  await db.query(
    `INSERT INTO orders (customer_id, external_id, ordered_at, currency, total) SELECT $1, 'o-' || g, now(), 'EUR', 10.5 FROM generate_series(1, $2) g`,
    [c, n],
  );
  await db.query(`INSERT INTO follow_ups (customer_id, due_at, subject) SELECT $1, now(), 'call ' || g FROM generate_series(1, $2) g`, [c, n]);
  await db.query(`INSERT INTO notes (customer_id, type, comments) SELECT $1, t, 'note ' || g FROM generate_series(1, $2) g, unnest($3::text[]) t`, [c, n, NOTE_TYPES]);
  await db.query(`INSERT INTO messages (customer_id, channel, direction, body, sent_at) SELECT $1, 'sms', 'inbound', 'm' || g, now() FROM generate_series(1, $2) g`, [c, n]);
  await db.query(`INSERT INTO preferences (customer_id, category, value) SELECT $1, 'size', 'v' || g FROM generate_series(1, $2) g`, [c, n]);
  await db.query(`INSERT INTO product_shares (customer_id, sku, shared_at) SELECT $1, 'sku' || g, now() FROM generate_series(1, $2) g`, [c, n]);
  for (const a of associateIds) await db.query('INSERT INTO customer_associates (customer_id, associate_id, role) VALUES ($1, $2, $3)', [c, a, role]);
}

/** Rows of each attached table held by a customer. */
export async function countsOf(db: Queryable, customerId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of ATTACHED_TABLES) out[t] = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t} WHERE customer_id = $1`, [customerId])).rows[0].n;
  return out;
}

/** Every row that a merge could change, as one comparable string. */
export async function snapshot(db: Queryable): Promise<string> {
  const parts: unknown[] = [];
  parts.push((await db.query('SELECT id, status, merged_into, updated_at, emails, loyalty_tier FROM customers ORDER BY id')).rows);
  for (const t of ATTACHED_TABLES) parts.push((await db.query(`SELECT id, customer_id FROM ${t} ORDER BY id`)).rows);
  for (const t of ['merges', 'events', 'idempotency_keys']) parts.push((await db.query(`SELECT count(*)::int AS n FROM ${t}`)).rows[0].n);
  return JSON.stringify(parts);
}
