// /integrations/webhooks routes (SPEC §7, admin scope, from 2022-08): thin handlers over service.ts.
import crypto from 'node:crypto';
import '../http/formats.ts';
import { ErrorBody, NoContent } from '../http/schema.ts';
import type { Services } from '../services.ts';
import type { RouteDef } from '../http/versioning/route.ts';
import { instantOf } from '../http/validator.ts';
import { decodeCursor, encodeCursor, Page, pageOf } from '../http/pagination.ts';
import { sourceOf } from '../http/context.ts';
import { CATALOG } from '../events/catalog.ts';
import * as S from './schema.ts';
import * as store from './store.ts';
import { listAttempts } from './attempts-store.ts';
import * as svc from './service.ts';
import { watchQueue } from './metrics.ts';
import { changesOf } from '../audit/actions.ts';
import { auditOf } from '../audit/record.ts';
import { createOnce } from '../crm/idempotency/service.ts';
import { conflict, invalid } from '../http/errors.ts';

const BASE = '/integrations/webhooks';
const secretDigest = (secret: string) => crypto.createHash('sha256').update(secret).digest('hex');
const SUBS = `${BASE}/subscriptions`;

/** What a page of a log list holds when its walk is budgeted (store.LOG_SCAN), for the OpenAPI document. */
const scanNote = (rows: string, when: string, of: string) => `With ${when}, a page looks at ${store.LOG_SCAN.budget.toLocaleString('en')} ${rows} at most `
  + `(${of}) and keeps those that match every filter: it may hold fewer than \`limit\` ${rows}, none even, and still have a \`nextCursor\`; `
  + 'follow it until `nextCursor` is null.';

/** A log list's page: when its walk stopped at its budget (store.LOG_SCAN), the cursor goes on after the last row read. */
function scannedPageOf<R extends { id: string }, O>(rows: store.ScannedPage<R>, limit: number, shape: (r: R) => O) {
  const page = pageOf(rows, limit, shape);
  if (page.nextCursor === null && rows.scanEnd !== undefined) page.nextCursor = encodeCursor(rows.scanEnd);
  return page;
}


export function webhookRoutes(s: Services): RouteDef[] {
  watchQueue(s.db);
  const allowPrivate = s.config.webhookAllowPrivate;
  const retryDefault = s.config.webhookRetrySchedule;
  const shape = (r: store.SubscriptionRow) => svc.shapeSubscription(r, retryDefault);
  const base = { tag: 'Webhooks', scope: 'admin' as const, since: '2022-08' };
  const uuidOf = (req: any) => (req.params as { uuid: string }).uuid;
  const target = (req: any) => ({ type: 'WebhookSubscription', id: uuidOf(req) });
  return [
    {
      ...base, id: 'webhooks.eventTypes', method: 'GET', path: `${BASE}/eventTypes`,
      summary: 'List the event types a subscription can listen for (2026-11: the event catalog, with the schema of each body)',
      schema: { response: { 200: S.EventCatalog } },
      handler: async () => ({ data: CATALOG.map(({ name, resourceType, description, schema, example }) => ({ name, resourceType, description, schema, example })) }),
    },
    {
      ...base, id: 'webhooks.subscriptions.list', method: 'GET', path: SUBS,
      summary: 'List webhook subscriptions',
      schema: { querystring: S.SubscriptionListQuery, response: { 200: Page(S.Subscription) } },
      handler: async (req) => {
        const q = req.query as any;
        const rows = await store.listSubscriptions(s.db, { ...q, limit: q.limit ?? 50 }, decodeCursor(q.cursor));
        return pageOf(rows, q.limit ?? 50, shape);
      },
    },
    {
      ...base, id: 'webhooks.subscriptions.create', method: 'POST', path: SUBS,
      audit: { action: 'subscription.created', target: (req, b) => ({ type: 'WebhookSubscription', id: b.uuid, details: changesOf(req.body) }) },
      summary: 'Create a subscription; the answer shows its signingSecret',
      schema: { body: S.SubscriptionCreate, response: { 201: S.SubscriptionWithSecret } },
      idempotencyKey: true,
      handler: async (req, reply) => {
        const write = await svc.newSubscription(req.body as S.SubscriptionCreateT, allowPrivate, auditOf(req), retryDefault);
        // The signing secret is not kept with the answer, only its digest: a replay shows the secret the first answer
        // showed, read from the subscription, and only while it is still the subscription's (a rotated one is revealed,
        // and audited, by GET …/secret: a replay showed it unaudited; found by a probe).
        type Created = Awaited<ReturnType<typeof write>>;
        return createOnce(s.db, req, reply, 201, write, () => s.db.transaction(write), {
          stored: ({ signingSecret, ...rest }) => ({ ...rest, signingSecretDigest: secretDigest(signingSecret) }) as unknown as Created,
          replayed: async (kept) => {
            const { signingSecretDigest, ...b } = kept as Created & { signingSecretDigest: string };
            const now = await store.findSubscription(s.db, b.uuid);
            if (!now) throw conflict(`the subscription this Idempotency-Key created (${b.uuid}) has been deleted since`, 'Idempotency-Key');
            if (secretDigest(now.signing_secret) !== signingSecretDigest) {
              throw conflict(`the signing secret of the subscription this Idempotency-Key created (${b.uuid}) was rotated since: GET ${SUBS}/${b.uuid}/secret shows it`, 'Idempotency-Key');
            }
            return { ...b, signingSecret: now.signing_secret };
          },
        });
      },
    },
    {
      ...base, id: 'webhooks.subscriptions.get', method: 'GET', path: `${SUBS}/:uuid`,
      summary: 'Get a subscription (credentials are never returned)',
      schema: { params: S.UuidParams, response: { 200: S.Subscription } },
      handler: async (req) => shape(await svc.mustFind(s.db, uuidOf(req))),
    },
    {
      ...base, id: 'webhooks.subscriptions.patch', method: 'PATCH', path: `${SUBS}/:uuid`,
      // Recorded as disabled only when it was active and is no longer: patchSubscription says which (the body alone
      // does not: `isActive:false` with a new URL of an inactive subscription changes it, it disables nothing).
      audit: { action: 'subscription.changed', target: (req) => ({ ...target(req), details: changesOf(req.body) }) },
      summary: 'Change a subscription (activate/deactivate with isActive)',
      schema: { params: S.UuidParams, body: S.SubscriptionPatch, response: { 200: S.Subscription, 409: ErrorBody } },
      handler: async (req) => svc.patchSubscription(s.db, uuidOf(req), req.body as S.SubscriptionPatchT, allowPrivate, auditOf(req), retryDefault),
    },
    {
      ...base, id: 'webhooks.subscriptions.delete', method: 'DELETE', path: `${SUBS}/:uuid`,
      audit: { action: 'subscription.deleted', target: (req, b) => ({ ...target(req), details: b }) },
      summary: 'Delete a subscription; its pending deliveries are cancelled',
      schema: { params: S.UuidParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        await svc.removeSubscription(s.db, uuidOf(req), auditOf(req));
        reply.code(204);
        return null;
      },
    },
    {
      ...base, id: 'webhooks.subscriptions.secret', method: 'GET', path: `${SUBS}/:uuid/secret`,
      audit: { action: 'subscription.secretRevealed', target },
      summary: 'Reveal the signing secret',
      schema: { params: S.UuidParams, response: { 200: S.SecretAnswer, 409: ErrorBody } },
      handler: async (req) => svc.revealSecret(s.db, uuidOf(req), auditOf(req)),
    },
    {
      ...base, id: 'webhooks.subscriptions.rotateSecret', method: 'POST', path: `${SUBS}/:uuid/rotateSecret`,
      audit: { action: 'subscription.secretRotated', target },
      summary: 'Make a new signing secret; the previous one keeps signing for 24 h (409 while ten sign already)',
      schema: { params: S.UuidParams, response: { 200: S.SecretAnswer, 409: ErrorBody } },
      handler: async (req) => svc.rotate(s.db, uuidOf(req), auditOf(req)),
    },
    {
      ...base, id: 'webhooks.subscriptions.test', method: 'POST', path: `${SUBS}/:uuid/test`,
      summary: 'Send a webhookTest event to this subscription now',
      schema: { params: S.UuidParams, response: { 202: S.TestAnswer, 409: ErrorBody } },
      handler: async (req, reply) => {
        const out = await svc.sendTest(s.db, uuidOf(req), sourceOf(req, s));
        reply.code(202);
        return out;
      },
    },
    {
      ...base, id: 'webhooks.subscriptions.recover', method: 'POST', path: `${SUBS}/:uuid/recover`,
      summary: 'Re-queue every failed delivery of this subscription created since a time',
      schema: { params: S.UuidParams, body: S.RecoverBody, response: { 202: S.RecoverAnswer } },
      handler: async (req, reply) => {
        const out = await svc.recover(s.db, uuidOf(req), (req.body as { since: string }).since);
        reply.code(202);
        return out;
      },
    },
    {
      ...base, id: 'webhooks.deliveries.list', method: 'GET', path: `${BASE}/deliveries`,
      summary: 'List deliveries, newest first (filter by status, subscription, eventType)',
      description: `List deliveries, newest first (filter by status, subscription, eventType). ${scanNote('deliveries', `an eventType of ${store.FEW_EVENTS.toLocaleString('en')} events or more, or a subscription and a status`, 'the subscription\'s or the status\'s when given')}`,
      schema: { querystring: S.DeliveryListQuery, response: { 200: Page(S.Delivery) } },
      handler: async (req) => {
        const q = req.query as any;
        const rows = await store.listDeliveries(s.db, { ...q, limit: q.limit ?? 50 }, decodeCursor(q.cursor));
        return scannedPageOf(rows, q.limit ?? 50, svc.shapeDelivery);
      },
    },
    {
      ...base, id: 'webhooks.deliveries.retry', method: 'POST', path: `${BASE}/deliveries/:uuid/retry`,
      summary: 'Attempt a delivery now',
      schema: { params: S.UuidParams, response: { 202: S.Delivery, 409: ErrorBody } },
      handler: async (req, reply) => {
        const out = await svc.retryNow(s.db, uuidOf(req));
        reply.code(202);
        return out;
      },
    },
    {
      ...base, id: 'webhooks.stats', method: 'GET', path: `${BASE}/stats`, since: '2026-11',
      summary: 'Attempts and successes per hour over the last hours, per subscription and overall (the console chart)',
      schema: { querystring: S.StatsQuery, response: { 200: S.StatsAnswer } },
      handler: async (req) => svc.stats(s.db, (req.query as { hours?: number }).hours ?? 24),
    },
    {
      ...base, id: 'webhooks.logs', method: 'GET', path: `${BASE}/logs`,
      summary: 'Delivery attempts, the last written first (an attempt is written when it ends); filters subscription, eventType, outcome, since, until',
      description: 'One row per attempt, newest first, with request headers (credentials redacted), request body and the first 4 KiB of the response. '
        + scanNote('attempts', `an eventType of ${store.FEW_EVENTS.toLocaleString('en')} events or more, an outcome, since or until`,
          'the subscription\'s when one is given; with since or until, of the days they fall in'),
      schema: { querystring: S.LogQuery, response: { 200: Page(S.Attempt) } },
      handler: async (req) => {
        const q = req.query as any;
        if (q.since !== undefined && q.until !== undefined && instantOf(q.since) > instantOf(q.until)) throw invalid('since must not be after until', 'since');
        const rows = await listAttempts(s.db, { ...q, limit: q.limit ?? 50 }, decodeCursor(q.cursor));
        return scannedPageOf(rows, q.limit ?? 50, svc.shapeAttempt);
      },
    },
  ];
}
