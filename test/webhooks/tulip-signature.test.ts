// The X-Tulip-Hmac-256 header as Tulip documents it (SPEC §16): a receiver written from
// https://docs.tulip.com/integrating/webhooks/authenticationandsecurity — HMAC-SHA256 of the message with the
// secret key, hex, compared with x-tulip-hmac-256 — holding the secret exactly as the API shows it, accepts
// Bulb's deliveries; the same delivery verifies with the standardwebhooks library (base64-decoded key).
// The receiver itself answers 401 when either check fails, so a delivery recorded `success` is the proof.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { describeEachDb } from '../helpers/suite.ts';
import { startWorker, type TestWorker } from '../helpers/worker.ts';
import { startReceiver, waitFor, type Behaviour, type Receiver } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.2', BULB_WEBHOOK_TIMEOUT_MS: '3000' };

await describeEachDb('X-Tulip-Hmac-256 as Tulip documents it', (ctx) => {
  const api = () => ctx.srv.api;
  let worker: TestWorker;
  let rx: Receiver;
  /** subscription uuid → the secret the receiver was configured with (as the API showed it). */
  const secrets = new Map<string, string>();
  const verdicts: { subscription: string; tulip: boolean; standard: boolean }[] = [];

  // The receiver, as an integrator writes it from Tulip's page: the raw body, the secret as shown, hex.
  const verifying: Behaviour = (req, res, r) => {
    const secret = secrets.get(r.body?.subscription) ?? '';
    const expected = crypto.createHmac('sha256', secret).update(r.raw).digest('hex');
    const offered = String(req.headers['x-tulip-hmac-256'] ?? '');
    const tulip = offered.length === expected.length && crypto.timingSafeEqual(Buffer.from(offered), Buffer.from(expected));
    let standard = true;
    try {
      new Webhook(secret).verify(r.raw.toString('utf8'), req.headers as Record<string, string>);
    } catch {
      standard = false;
    }
    verdicts.push({ subscription: r.body?.subscription, tulip, standard });
    res.writeHead(tulip && standard ? 204 : 401).end();
  };

  before(async () => {
    worker = await startWorker(ctx.tdb.db, ENV);
    rx = await startReceiver(verifying);
  });
  after(async () => {
    await worker?.stop();
    await rx?.close();
  });

  it('a receiver keyed with the whsec_ secret as shown verifies the hex header; standardwebhooks verifies the same delivery', async () => {
    const sub = await api().post('/integrations/webhooks/subscriptions', { url: rx.url, eventType: 'customerCreate' });
    assert.equal(sub.status, 201, sub.text);
    // The secret as GET …/secret shows it is the one the receiver holds (the same text as the create answer).
    const shown = (await api().get(`/integrations/webhooks/subscriptions/${sub.body.uuid}/secret`)).body.signingSecret;
    assert.equal(shown, sub.body.signingSecret);
    secrets.set(sub.body.uuid, shown);

    assert.equal((await api().post('/crm/customers', { externalId: 'tulip-sig-1', firstName: 'Zoë' })).status, 201);
    const logs = await waitFor(async () => {
      const l = (await api().get(`/integrations/webhooks/logs?subscription=${sub.body.uuid}`)).body.data as any[];
      return l.length > 0 ? l : null;
    }, 'the first attempt');
    assert.deepEqual(verdicts.filter((v) => v.subscription === sub.body.uuid)[0], { subscription: sub.body.uuid, tulip: true, standard: true });
    assert.equal(logs[0].outcome, 'success', 'the verifying receiver accepted the delivery');
    assert.equal(logs[0].statusCode, 204);

    // The hex header is not keyed with the base64-decoded tail (the Standard Webhooks key): a receiver doing
    // that would be checking a different rule from Tulip's page.
    const r = rx.received.find((x) => x.body?.subscription === sub.body.uuid)!;
    const decodedKey = crypto.createHmac('sha256', Buffer.from(shown.slice('whsec_'.length), 'base64')).update(r.raw).digest('hex');
    assert.notEqual(r.headers['x-tulip-hmac-256'], decodedKey);
    await api().delete(`/integrations/webhooks/subscriptions/${sub.body.uuid}`);
  });
}, ENV);
