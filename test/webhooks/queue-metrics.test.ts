// The queue gauges say nothing rather than 0 while the database cannot give them (src/webhooks/metrics.ts): NaN, and
// bulb_webhook_queue_stats_ok 0 to alert on. Until 2026-11-28 they read 0 then (found by probing): an alert on the
// queue's depth or age went quiet exactly when delivery stalled.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { it } from 'node:test';
import { hookedDb } from '../helpers/db.ts';
import { describeEachDb } from '../helpers/suite.ts';
import { startServer } from '../helpers/server.ts';

await describeEachDb('webhook queue metrics while the database cannot answer', (ctx) => {
  it('NaN and queue_stats_ok 0 while the query fails; figures again once it answers', async () => {
    let failing = false;
    const db = hookedDb(ctx.tdb.db, {
      statement: (sql) => {
        if (failing && sql.includes('count(*) AS depth')) throw Object.assign(new Error('the database system is shutting down'), { code: '57P03' });
      },
    });
    const srv = await startServer(db);
    try {
      const scrape = async () => (await fetch(`${srv.url}/metrics`)).text();
      const gauge = (text: string, name: string) => new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
      const up = await scrape();
      assert.match(gauge(up, 'bulb_webhook_queue_depth') ?? '', /^\d+$/);
      assert.equal(gauge(up, 'bulb_webhook_queue_stats_ok'), '1');
      failing = true;
      await sleep(1_100); // past the figures one scrape shares
      const down = await scrape();
      assert.match(gauge(down, 'bulb_webhook_queue_depth') ?? '', /^nan$/i); // prom-client writes Nan; Prometheus parses any case
      assert.match(gauge(down, 'bulb_webhook_oldest_due_age_seconds') ?? '', /^nan$/i);
      assert.equal(gauge(down, 'bulb_webhook_queue_stats_ok'), '0');
      failing = false;
      await sleep(1_100);
      const back = await scrape();
      assert.match(gauge(back, 'bulb_webhook_queue_depth') ?? '', /^\d+$/);
      assert.equal(gauge(back, 'bulb_webhook_queue_stats_ok'), '1');
    } finally {
      await srv.close();
    }
  });
});
