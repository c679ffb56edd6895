// Retries start on time (issue 24 item 1): a failing endpoint's attempts come the schedule's delays apart, not
// the fallback sweep's 2 s. Each gap is asserted generously, [delay, delay + 1 s] (the bench measures the
// lateness after due precisely: bench/webhooks.ts, "retry lateness"). The 2.5 s delay outlasts a sweep, whose due
// time for the lane must not be earlier than the database's (a claim run early finds nothing).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachDb } from '../helpers/suite.ts';
import { startWorker } from '../helpers/worker.ts';
import { sleep, startReceiver, status, waitFor, type Received } from './receiver.ts';

const SCHEDULE = [0.5, 1, 2.5];
const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: SCHEDULE.join(','), BULB_WEBHOOK_TIMEOUT_MS: '3000' };

await describeEachDb('webhook retries start when due', (ctx) => {
  /** `events` test events 200 ms apart to one subscription of an endpoint answering 500; every attempt, by event. */
  const failingRounds = async (events: number, pollMs?: number) => {
    const w = await startWorker(ctx.tdb.db, ENV, pollMs ? { pollMs } : {});
    const fail = await startReceiver(status(500, 'down'));
    try {
      const sub = await ctx.srv.api.post('/integrations/webhooks/subscriptions', { url: fail.url, eventType: 'webhookTest' });
      assert.equal(sub.status, 201, sub.text);
      for (let i = 0; i < events; i++) {
        if (i > 0) await sleep(200);
        assert.equal((await ctx.srv.api.post(`/integrations/webhooks/subscriptions/${sub.body.uuid}/test`)).status, 202);
      }
      await waitFor(() => fail.received.length >= events * (1 + SCHEDULE.length), 'every attempt', 30_000);
      await ctx.srv.api.delete(`/integrations/webhooks/subscriptions/${sub.body.uuid}`);
      const byEvent = new Map<string, Received[]>();
      for (const r of fail.received) byEvent.set(r.body.uuid, [...(byEvent.get(r.body.uuid) ?? []), r]);
      assert.equal(byEvent.size, events);
      return byEvent;
    } finally {
      await w.stop();
      await fail.close();
    }
  };
  const assertGaps = (byEvent: Map<string, Received[]>) => {
    for (const [uuid, rs] of byEvent) {
      const gaps = rs.slice(1).map((x, i) => (x.at - rs[i].at) / 1000);
      gaps.forEach((g, i) => assert.ok(g >= SCHEDULE[i] && g <= SCHEDULE[i] + 1, `event ${uuid}, gap ${i + 1}: ${g.toFixed(3)} s for a delay of ${SCHEDULE[i]} s (all: ${gaps.map((x) => x.toFixed(3)).join(', ')})`));
    }
  };

  it('a failing endpoint gets its retries the schedule\'s delays apart (each gap within [delay, delay + 1 s])', async () => {
    assertGaps(await failingRounds(1));
  });

  it('so do several deliveries of one endpoint falling due at different times, without the fallback sweep (each due time wakes the lane in turn)', async () => {
    assertGaps(await failingRounds(3, 60_000));
  });
}, ENV);
