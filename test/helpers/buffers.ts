// Counting what a statement reads: shared buffers touched (pages, not time), with the plan Bulb's statement
// really gets (a named one: the cached generic plan; an unnamed one: planned per call with its values).
import type { Db, Queryable } from '../../src/db/db.ts';

export interface Sent {
  sql: string;
  params: unknown[];
  name?: string;
}

/** The statements a store function sends, recorded on their way to the database. */
export function recording(db: Db): { q: Queryable; sent: Sent[] } {
  const sent: Sent[] = [];
  return { sent, q: { query: (sql, params = [], name) => (sent.push({ sql, params, name }), db.query(sql, params, name)), exec: (sql) => db.exec(sql) } };
}

let probes = 0;

/** Shared buffers the statement touches when run as Bulb runs it (named: generic plan; unnamed: custom plan). */
export async function buffersOf(db: Db, s: Sent): Promise<{ buffers: number; plan: string }> {
  const text = (v: unknown) => (Array.isArray(v) ? `{${v.join(',')}}` : String(v));
  const lit = (v: unknown) => (v === null || v === undefined ? 'NULL' : `'${text(v).replaceAll("'", "''")}'`);
  const name = `probe_${++probes}`;
  return db.transaction(async (tx) => {
    await tx.query(`SELECT set_config('plan_cache_mode', $1, true)`, [s.name ? 'force_generic_plan' : 'force_custom_plan']);
    await tx.exec(`PREPARE ${name} AS ${s.sql}`);
    const args = s.params.length ? `(${s.params.map(lit).join(', ')})` : '';
    const r = await tx.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE ${name}${args}`);
    await tx.exec(`DEALLOCATE ${name}`);
    const out = r.rows[0]['QUERY PLAN'];
    const plan = (typeof out === 'string' ? JSON.parse(out) : out)[0].Plan;
    return { buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'], plan: JSON.stringify(plan) };
  });
}

/**
 * What one call of a store function costs: the buffers of every statement it sends, each run as Bulb runs it.
 * The call is made 7 times first, so a named statement is past its custom plans.
 */
export async function costOf(db: Db, call: (q: Queryable) => Promise<unknown>): Promise<{ buffers: number; plans: string; statements: number }> {
  const rec = recording(db);
  for (let i = 0; i < 7; i++) await call(rec.q);
  const last = rec.sent.slice(-rec.sent.length / 7);
  let buffers = 0;
  const plans: string[] = [];
  for (const s of last) {
    const b = await buffersOf(db, s);
    buffers += b.buffers;
    plans.push(b.plan);
  }
  return { buffers, plans: plans.join('\n'), statements: last.length };
}
