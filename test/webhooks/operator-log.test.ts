// The operator's log of delivery (docs/operations.md, Logs): a delivery failed for good and a subscription disabled
// each say a warn line with the uuids the API shows, through the jobs' log (src/job-log.ts). Until 2026-11-29 the
// server's log said nothing of webhooks: every attempt was in the logs API only (found by a probe).
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Writable } from 'node:stream';
import { describeEachDb } from '../helpers/suite.ts';
import { createSubscription } from '../helpers/server.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { jobLog } from '../../src/job-log.ts';
import { startReceiver, status, waitFor, type Receiver } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_TIMEOUT_MS: '3000', BULB_WEBHOOK_RETRY_UNIT_MS: '1' };
const SUBS = '/integrations/webhooks/subscriptions';

await describeEachDb('webhooks: the operator\'s log', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  const lines: any[] = [];
  let worker: TestWorker;
  let down: Receiver;
  let gone: Receiver;
  before(async () => {
    // The jobs' own logger, as main.ts gives it to the scheduler, writing JSON lines here.
    const stream = new Writable({ write: (chunk, _e, cb) => (String(chunk).split('\n').filter(Boolean).forEach((l) => lines.push(JSON.parse(l))), cb()) });
    const log = jobLog({ logLevel: 'info', role: 'worker' }, stream);
    worker = await startWorker(ctx.tdb.db, ENV, { log: (m, e) => log(`webhooks: ${m}`, e), warn: (m, f) => log.warn?.(`webhooks: ${m}`, f) });
    down = await startReceiver(status(500, 'down'));
    gone = await startReceiver(status(410, 'gone'));
  });
  after(async () => {
    await worker?.stop();
    await down?.close();
    await gone?.close();
  });

  it('a delivery out of attempts: one warn line naming the delivery, its subscription, the event type and the last error', async () => {
    const s = await createSubscription(api(), { url: down.url, eventTypes: ['webhookTest'], retrySchedule: [1, 1] });
    assert.equal((await api().post(`${SUBS}/${s.uuid}/test`)).status, 202);
    const line = await waitFor(() => lines.find((l) => l.msg === 'webhooks: delivery failed: no attempts left' && l.subscriptionUuid === s.uuid), 'the line');
    const d = (await api().get(`/integrations/webhooks/deliveries?subscription=${s.uuid}`)).body.data[0];
    assert.deepEqual([line.level, line.deliveryUuid, line.eventType, line.lastError, d.status], [40, d.uuid, 'webhookTest', 'HTTP_STATUS 500', 'failed']);
    assert.equal(typeof line.hostname, 'string');
    assert.equal(down.received.filter((r) => r.body?.subscription === s.uuid).length, 3, 'the line came after the third attempt, not before');
    assert.equal(lines.filter((l) => l.deliveryUuid === d.uuid).length, 1, 'one line per delivery');
  });

  it('a subscription disabled (410 Gone): one warn line with its uuid and the reason its health shows', async () => {
    const s = await createSubscription(api(), { url: gone.url, eventTypes: ['webhookTest'] });
    assert.equal((await api().post(`${SUBS}/${s.uuid}/test`)).status, 202);
    const line = await waitFor(() => lines.find((l) => l.msg === 'webhooks: subscription disabled' && l.subscriptionUuid === s.uuid), 'the line');
    const health = (await api().get(`${SUBS}/${s.uuid}`)).body.health;
    assert.deepEqual([line.level, line.reason], [40, health.disabledReason]);
    assert.match(line.reason, /410 Gone/);
  });
}, ENV);
