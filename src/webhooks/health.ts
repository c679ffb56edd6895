// Endpoint health (SPEC §11): what follows from a batch of attempt results, in the transaction that records
// them — health counters, automatic disabling after BULB_WEBHOOK_DISABLE_AFTER_HOURS of continuous failure or at
// once on a 410 Gone,
// a manual retry's kept schedule, and the operational events webhookDeliveryFailed / webhookSubscriptionDisabled.
import type { Db } from '../db/db.ts';
import type { Config } from '../config.ts';
import { wireNames } from '../config.ts';
import { recordResults, type AttemptResult, type DeliveryState, type SubOutcome } from './queue-store.ts';
import { NO_MORE_RETRIES } from './schedule.ts';
import { disableFailing, emitOperational, noticesOf, type Notice } from './health-store.ts';
import { auditSubscriptionsDisabled } from '../audit/store.ts';
import { notifySubscriptionsChanged } from './store.ts';

/** 410 Gone: the receiver says to stop sending (Standard Webhooks); the subscription is disabled at once. */
export const GONE = 410;

/** Folds a batch of results into one outcome per subscription (results taken in the order they started). */
export function outcomesBySubscription(rs: AttemptResult[]): SubOutcome[] {
  const bySub = new Map<string, AttemptResult[]>();
  for (const r of rs) {
    const list = bySub.get(r.subscriptionId);
    if (list) list.push(r);
    else bySub.set(r.subscriptionId, [r]);
  }
  const out: SubOutcome[] = [];
  for (const [subscriptionId, list] of bySub) {
    // startedAt is toISOString() (same length, UTC): text order is time order.
    list.sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
    let lastOk = -1;
    let pauseMs: number | null = null;
    list.forEach((r, i) => {
      if (r.ok) lastOk = i;
      if (r.retryAfterMs !== null) pauseMs = Math.max(pauseMs ?? 0, r.retryAfterMs);
    });
    const after = list.slice(lastOk + 1);
    const last = after[after.length - 1];
    const gone = after.find((r) => r.statusCode === GONE);
    out.push({
      subscriptionId,
      lastOkAt: lastOk >= 0 ? list[lastOk].startedAt : null,
      failures: after.length,
      firstFailureAt: after[0]?.startedAt ?? null,
      lastFailureAt: last?.startedAt ?? null,
      lastError: last ? [last.errorCode, last.statusCode].filter((x) => x !== null).join(' ') || 'failure' : null,
      pauseMs,
      goneAt: gone?.startedAt ?? null,
    });
  }
  return out.sort((a, b) => Number(a.subscriptionId) - Number(b.subscriptionId));
}

/**
 * Records a batch of attempt results and everything that follows from them, atomically: health counters and
 * results (one statement), then automatic disabling and the operational events. A batch from which nothing can
 * follow (no delivery out of retries, no subscription whose attempts in it all failed: the usual batch of a
 * healthy endpoint) is that one statement alone, its own transaction; any other batch runs in one transaction
 * with what follows. Returns the deliveries' new states.
 */
export async function recordOutcomes(db: Db, config: Config, rs: AttemptResult[]): Promise<{ states: DeliveryState[]; notices: Notice[] }> {
  if (rs.length === 0) return { states: [], notices: [] };
  const outs = outcomesBySubscription(rs);
  // Whether a failure is a delivery's last is decided by the statement (it reads the subscription's schedule as it
  // stands then): any failure not deferred by Retry-After may be one.
  const mayFollow = outs.some((o) => (o.failures > 0 && o.lastOkAt === null) || o.goneAt !== null) || rs.some((r) => !r.ok && r.retryAfterMs === null);
  // A failing streak ends at a silence as long as the disable window (docs/delivery.md (failing streak)).
  const gap = config.webhookDisableAfterHours;
  const policy = { defaultSchedule: config.webhookRetrySchedule, unitMs: config.webhookRetryUnitMs };
  if (!mayFollow) return { states: await recordResults(db, rs, outs, gap, policy), notices: [] };
  return db.transaction(async (tx) => {
    const final = await recordResults(tx, rs, outs, gap, policy);
    const disabled = await disableFailing(tx, outs, config.webhookDisableAfterHours);
    await auditSubscriptionsDisabled(tx, disabled); // audit log (SPEC §15): actor system
    await notifySubscriptionsChanged(tx, disabled); // what other workers hold of them is not sent
    // With its partition's key, as claimed: each is found in one partition.
    const createdAt = new Map(rs.map((r) => [String(r.deliveryId), r.deliveryCreatedAt]));
    const failed = final.filter((s) => s.status === 'failed').map((s) => ({ id: s.id, createdAt: createdAt.get(String(s.id))! }));
    await emitOperational(tx, failed, disabled, wireNames(config.serviceName).sourceApi, NO_MORE_RETRIES);
    const lastError = new Map(rs.map((r) => [String(r.deliveryId), r.statusCode === null ? (r.errorCode ?? 'unknown') : `${r.errorCode ?? 'HTTP_STATUS'} ${r.statusCode}`]));
    return { states: final, notices: await noticesOf(tx, failed, disabled, lastError) };
  });
}
