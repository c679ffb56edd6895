// Secret rotation (SPEC §7): every rotated-out secret keeps signing for 24 h after its own rotation, however
// many rotations follow; webhook-signature carries one signature per valid secret; the hex header stays keyed
// with the oldest still-valid secret. Checked as receivers would: Bulb's verifyWebhook, docs/delivery.md's Python
// snippet (run with python3), the standardwebhooks library, and a hex-only (Tulip-style) check.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { describeEachDb } from '../helpers/suite.ts';
import { useWorkerAndReceiver } from '../helpers/worker.ts';
import { verifyWebhook } from '../../packages/client/src/verify.ts';
import { waitFor, type Receiver, type Received } from './receiver.ts';

const ENV = { BULB_WEBHOOK_ALLOW_PRIVATE: 'true', BULB_WEBHOOK_RETRY_SCHEDULE: '0.2', BULB_WEBHOOK_TIMEOUT_MS: '3000' };
// The hex header is keyed with the secret exactly as shown (https://docs.tulip.com/integrating/webhooks/authenticationandsecurity).
const hexOf = (secret: string, body: Buffer) => crypto.createHmac('sha256', secret).update(body).digest('hex');

/** docs/delivery.md's Python verifier, taken from the page itself and run by python3 (null: no python3 here). */
const README_PY = /```python\n([\s\S]*?)```/.exec(fs.readFileSync(new URL('../../docs/delivery.md', import.meta.url), 'utf8'))![1];
const hasPython = spawnSync('python3', ['--version']).status === 0;
function pythonVerifies(r: Received, secret: string): boolean | null {
  if (!hasPython) return null;
  const script = `${README_PY}\nimport json, sys\nd = json.load(sys.stdin)\ntry:\n    verify_webhook(base64.b64decode(d["body"]), d["headers"], d["secret"])\n    print("ok")\nexcept Exception as e:\n    print("refused", e)\n`;
  const input = JSON.stringify({ body: r.raw.toString('base64'), headers: r.headers, secret });
  const out = spawnSync('python3', ['-c', script], { input, encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  return out.stdout.trim() === 'ok';
}

await describeEachDb('secret rotation', (ctx) => {
  const api = () => ctx.srv.api.withVersion('2026-11');
  let rx: Receiver;
  useWorkerAndReceiver(ctx, ENV, (_w, r) => (rx = r));

  const deliverOne = async (sub: string, externalId: string) => {
    const seen = rx.received.filter((r) => r.body?.subscription === sub).length;
    assert.equal((await api().post('/crm/customers', { externalId })).status, 201);
    const list = await waitFor(() => {
      const l = rx.received.filter((r) => r.body?.subscription === sub);
      return l.length > seen ? l : null;
    }, 'a delivery');
    return list[list.length - 1];
  };

  /** What each kind of receiver holding `secret` concludes. */
  const receivers = (r: Received, secret: string) => {
    const h = r.headers as Record<string, string>;
    const tryIt = (f: () => unknown) => {
      try {
        f();
        return true;
      } catch {
        return false;
      }
    };
    return {
      verifyWebhook: tryIt(() => verifyWebhook(r.raw, h, secret)),
      standardwebhooks: tryIt(() => new Webhook(secret).verify(r.raw.toString('utf8'), h)),
      python: pythonVerifies(r, secret),
      hexOnly: h['x-tulip-hmac-256'] === hexOf(secret, r.raw),
    };
  };

  it('two rotations within 24 h: all three secrets sign, the hex header stays on the oldest; each rotated-out secret expires on its own', async () => {
    const created = await api().post('/integrations/webhooks/subscriptions', { url: rx.url, eventTypes: ['customerCreate'] });
    assert.equal(created.status, 201, created.text);
    const s0 = created.body.signingSecret as string;
    const rot1 = await api().post(`/integrations/webhooks/subscriptions/${created.body.uuid}/rotateSecret`);
    const s1 = rot1.body.signingSecret as string;
    const rot2 = await api().post(`/integrations/webhooks/subscriptions/${created.body.uuid}/rotateSecret`);
    const s2 = rot2.body.signingSecret as string;
    assert.equal(new Set([s0, s1, s2]).size, 3);
    assert.ok(Date.parse(rot2.body.previousSecretExpiresAt) > Date.now() + 23.9 * 3600_000);

    const r = await deliverOne(created.body.uuid, 'rot-1');
    assert.equal(String(r.headers['webhook-signature']).split(' ').length, 3, 'one signature per valid secret');
    const py = hasPython ? true : null;
    // The second rotation did not drop the first secret: a receiver still holding s0 keeps working.
    assert.deepEqual(receivers(r, s0), { verifyWebhook: true, standardwebhooks: true, python: py, hexOnly: true });
    assert.deepEqual(receivers(r, s1), { verifyWebhook: true, standardwebhooks: true, python: py, hexOnly: false });
    assert.deepEqual(receivers(r, s2), { verifyWebhook: true, standardwebhooks: true, python: py, hexOnly: false });
    assert.deepEqual(receivers(r, 'whsec_' + crypto.randomBytes(32).toString('base64')), { verifyWebhook: false, standardwebhooks: false, python: hasPython ? false : null, hexOnly: false });

    // 24 h after the first rotation (its expiry moved into the past), s0 stops signing; s1 keeps its own 24 h.
    await ctx.tdb.db.query(
      `UPDATE webhook_retired_secrets SET expires_at = now() - interval '1 second'
       WHERE id = (SELECT min(r.id) FROM webhook_retired_secrets r JOIN webhook_subscriptions s ON s.id = r.subscription_id WHERE s.uuid = $1)`,
      [created.body.uuid],
    );
    const r2 = await deliverOne(created.body.uuid, 'rot-2');
    assert.equal(String(r2.headers['webhook-signature']).split(' ').length, 2);
    assert.deepEqual(receivers(r2, s0), { verifyWebhook: false, standardwebhooks: false, python: hasPython ? false : null, hexOnly: false });
    assert.deepEqual(receivers(r2, s1), { verifyWebhook: true, standardwebhooks: true, python: py, hexOnly: true });
    assert.deepEqual(receivers(r2, s2), { verifyWebhook: true, standardwebhooks: true, python: py, hexOnly: false });

    // Once every rotated-out secret expired, only the current one signs (and keys the hex header).
    await ctx.tdb.db.query(`UPDATE webhook_retired_secrets SET expires_at = now() - interval '1 second'`);
    const r3 = await deliverOne(created.body.uuid, 'rot-3');
    assert.equal(String(r3.headers['webhook-signature']).split(' ').length, 1);
    assert.deepEqual(receivers(r3, s2), { verifyWebhook: true, standardwebhooks: true, python: py, hexOnly: true });
    assert.deepEqual(receivers(r3, s1), { verifyWebhook: false, standardwebhooks: false, python: hasPython ? false : null, hexOnly: false });
    const secret = await api().get(`/integrations/webhooks/subscriptions/${created.body.uuid}/secret`);
    assert.deepEqual(secret.body, { signingSecret: s2, previousSecretExpiresAt: null });
  });
  it('at most ten secrets sign at once: an eleventh within 24 h is a 409 that changes nothing, allowed again once the oldest expires', async () => {
    const SUBS = '/integrations/webhooks/subscriptions';
    const created = await api().post(SUBS, { url: rx.url, eventTypes: ['customerCreate'] });
    assert.equal(created.status, 201, created.text);
    const uuid = created.body.uuid;
    let last = '';
    for (let i = 0; i < 9; i++) {
      const r = await api().post(`${SUBS}/${uuid}/rotateSecret`);
      assert.equal(r.status, 200, r.text);
      last = r.body.signingSecret;
    }
    const refused = await api().post(`${SUBS}/${uuid}/rotateSecret`);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.errors[0].errorCode, 'Conflict');
    assert.equal(refused.body.errors[0].moreInfo, 'signingSecret');
    assert.match(refused.body.errors[0].message, /^10 secrets sign .* the oldest stops signing at \d{4}-\d\d-\d\dT[\d:.]+Z; rotate again after that$/);
    assert.equal((await api().get(`${SUBS}/${uuid}/secret`)).body.signingSecret, last, 'the current secret stays');
    const r = await deliverOne(uuid, 'rot-cap-1');
    assert.equal(String(r.headers['webhook-signature']).split(' ').length, 10, 'ten signatures, the header bounded');
    assert.ok(receivers(r, last).verifyWebhook);
    // The oldest rotated-out secret's grace ends: one more rotation is allowed.
    await ctx.tdb.db.query(
      `UPDATE webhook_retired_secrets SET expires_at = now() - interval '1 second'
       WHERE id = (SELECT min(rs.id) FROM webhook_retired_secrets rs JOIN webhook_subscriptions s ON s.id = rs.subscription_id WHERE s.uuid = $1)`, [uuid]);
    assert.equal((await api().post(`${SUBS}/${uuid}/rotateSecret`)).status, 200);
  });
}, ENV);
