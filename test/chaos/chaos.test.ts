// A short fault-injection run (bench/chaos.ts): mixed load through two API and two worker processes on
// PostgreSQL while processes are SIGKILLed, database connections cut and webhook receivers fail and hang.
// Nothing acknowledged may be lost or duplicated, and every event reaches every subscription.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { postgresAvailable, PG_URL } from '../helpers/db.ts';
import { runChaos } from '../../bench/chaos.ts';

const hasPg = await postgresAvailable(); // throws with CI=true when PostgreSQL is unreachable
if (!hasPg) console.log(`# SKIP chaos test: no PostgreSQL at ${PG_URL} (set TEST_DATABASE_URL; mandatory with CI=true)`);

describe('fault injection [pg]', { skip: hasPg ? false : `no PostgreSQL at ${PG_URL}` }, () => {
  it('loses no event and no row while processes die and connections are cut', { timeout: 900_000 }, async () => {
    const r = await runChaos({ seconds: Number(process.env.BULB_CHAOS_SECONDS ?? 25), drainSeconds: 90 });
    console.log(r.report.map((l) => `# ${l}`).join('\n'));
    assert.ok(r.kills + r.dbCuts > 0, 'at least one fault was injected');
    if (r.webhooks) assert.equal(r.eventsLost, 0, 'every (event, subscription) pair delivered at a receiver');
    assert.equal(r.customersLost, 0, 'acknowledged customers are in the database');
    assert.equal(r.customersWithoutEvent, 0, 'every customer has its customerCreate event');
    assert.equal(r.ordersLost, 0, 'acknowledged orders are in the database, and nothing unsent is');
    assert.equal(r.ordersDuplicated, 0, 'no order is duplicated');
    assert.equal(r.ordersLeftOnMergedAway, 0, 'merges moved every order of their secondaries');
    assert.ok(r.ok);
  });
});
