// SQL of webhook_subscription_versions (migration 051): the sending configs attempts point at. Rows are immutable and
// content-addressed (subscription, digest), so each process keeps what it wrote or read, per database handle: a config
// costs one statement per process the first time it is used, and a version is read once per process. Ids are never
// reused, so a kept id never names another row.
import type { Queryable } from '../db/db.ts';
import { digestOf, type SendingConfig } from './attempt-request.ts';

const MAX_KEPT = 10_000;
const kept = new WeakMap<Queryable, { idsByContent: Map<string, number>; byId: Map<number, SendingConfig> }>();

function cacheOf(db: Queryable) {
  let c = kept.get(db);
  if (!c) kept.set(db, (c = { idsByContent: new Map(), byId: new Map() }));
  return c;
}

function keep<K, V>(m: Map<K, V>, k: K, v: V): void {
  if (m.size >= MAX_KEPT) m.clear();
  m.set(k, v);
}

/**
 * A config's key in the map: its fields as text (headers in the order they were built, the same for every request of
 * one config), so that a hit costs no digest.
 */
const contentKey = (c: SendingConfig) => JSON.stringify([c.subscriptionId, c.url, c.webhookVersion, c.hmacHeader, c.headers]);

/** The version id of each config (written when new), in order. One statement for those this process has not seen. */
export async function versionIds(db: Queryable, configs: SendingConfig[]): Promise<number[]> {
  const { idsByContent } = cacheOf(db);
  const keys = configs.map(contentKey);
  const found = new Map<string, number>();
  // The configs not seen yet, by digest (the same headers built in another order are one version).
  const missing = new Map<string, { config: SendingConfig; keys: string[] }>();
  keys.forEach((k, i) => {
    const id = idsByContent.get(k);
    if (id !== undefined) return void found.set(k, id);
    const d = `${configs[i].subscriptionId} ${digestOf(configs[i])}`;
    const m = missing.get(d);
    if (!m) missing.set(d, { config: configs[i], keys: [k] });
    else if (!m.keys.includes(k)) m.keys.push(k);
  });
  if (missing.size > 0) {
    // ON CONFLICT DO UPDATE (a no-op) so that a row another process wrote first is returned too.
    const r = await db.query<{ id: number; subscription_id: string; digest: string }>(
      `INSERT INTO webhook_subscription_versions (subscription_id, digest, url, webhook_version, hmac_header, headers)
       SELECT v.subscription_id, v.digest, v.url, v.webhook_version, v.hmac_header, v.headers
       FROM json_to_recordset($1::json) AS v(subscription_id bigint, digest text, url text, webhook_version text, hmac_header text, headers jsonb)
       ORDER BY v.subscription_id, v.digest
       ON CONFLICT (subscription_id, digest) DO UPDATE SET digest = EXCLUDED.digest
       RETURNING id, subscription_id::text, digest`,
      [JSON.stringify([...missing.values()].map(({ config: c }) => ({
        subscription_id: c.subscriptionId, digest: digestOf(c), url: c.url, webhook_version: c.webhookVersion, hmac_header: c.hmacHeader, headers: c.headers,
      })))],
    );
    for (const row of r.rows) {
      for (const k of missing.get(`${row.subscription_id} ${row.digest}`)?.keys ?? []) {
        found.set(k, row.id);
        keep(idsByContent, k, row.id);
      }
    }
  }
  return keys.map((k) => {
    const id = found.get(k);
    if (id === undefined) throw new Error(`no version written for ${k}`);
    return id;
  });
}

/** The versions of these ids (read once per process: they never change). */
export async function versionsById(db: Queryable, ids: number[]): Promise<Map<number, SendingConfig>> {
  const { byId } = cacheOf(db);
  const missing = [...new Set(ids)].filter((id) => !byId.has(id));
  if (missing.length > 0) {
    const r = await db.query<{ id: number; subscription_id: string; url: string; webhook_version: string; hmac_header: string; headers: Record<string, string> }>(
      `SELECT id, subscription_id::text, url, webhook_version, hmac_header, headers FROM webhook_subscription_versions WHERE id = ANY($1::int[])`,
      [missing],
    );
    for (const v of r.rows) {
      keep(byId, v.id, { subscriptionId: v.subscription_id, url: v.url, webhookVersion: v.webhook_version, hmacHeader: v.hmac_header, headers: v.headers });
    }
  }
  const out = new Map<number, SendingConfig>();
  for (const id of ids) {
    const v = byId.get(id);
    if (v) out.set(id, v);
  }
  return out;
}
