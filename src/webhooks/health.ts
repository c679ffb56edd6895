// Endpoint health (SPEC §11): what follows from a batch of attempt results, in the transaction that records
// them — health counters, automatic disabling after BULB_WEBHOOK_DISABLE_AFTER_HOURS of continuous failure,
// a manual retry's kept schedule, and the operational events webhookDeliveryFailed / webhookSubscriptionDisabled.
import type { Db } from '../db/db.ts';
import type { Config } from '../config.ts';
import { wireNames } from '../config.ts';
import { recordResults, type AttemptResult } from './queue-store.ts';
import { NO_MORE_RETRIES } from './schedule.ts';
import { disableFailing, emitOperational, updateHealth, type SubOutcome } from './health-store.ts';
import { auditSubscriptionsDisabled } from '../audit/store.ts';

/** Folds a batch of results into one outcome per subscription (results taken in the order they started). */
export function outcomesBySubscription(rs: AttemptResult[]): SubOutcome[] {
  const bySub = new Map<string, AttemptResult[]>();
  for (const r of rs) bySub.set(r.subscriptionId, [...(bySub.get(r.subscriptionId) ?? []), r]);
  const out: SubOutcome[] = [];
  for (const [subscriptionId, list] of bySub) {
    list.sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
    let lastOk = -1;
    list.forEach((r, i) => r.ok && (lastOk = i));
    const after = list.slice(lastOk + 1);
    const last = after[after.length - 1];
    out.push({
      subscriptionId,
      lastOkAt: lastOk >= 0 ? list[lastOk].startedAt : null,
      failures: after.length,
      firstFailureAt: after[0]?.startedAt ?? null,
      lastError: last ? [last.errorCode, last.statusCode].filter((x) => x !== null).join(' ') || 'failure' : null,
    });
  }
  return out.sort((a, b) => Number(a.subscriptionId) - Number(b.subscriptionId));
}

/**
 * Records a batch of attempt results and everything that follows from them, in one transaction: health first
 * (it locks the subscriptions, before any delivery row), then the results (with a manual retry's kept schedule),
 * automatic disabling, and the operational events. Returns the deliveries' new states.
 */
export async function recordOutcomes(db: Db, config: Config, rs: AttemptResult[]): Promise<{ id: string; status: string; next_attempt_at: string | null }[]> {
  if (rs.length === 0) return [];
  const outs = outcomesBySubscription(rs);
  return db.transaction(async (tx) => {
    await updateHealth(tx, outs);
    const final = await recordResults(tx, rs);
    const disabled = await disableFailing(tx, outs, config.webhookDisableAfterHours);
    await auditSubscriptionsDisabled(tx, disabled); // audit log (SPEC §15): actor system
    const failed = final.filter((s) => s.status === 'failed').map((s) => s.id);
    await emitOperational(tx, failed, disabled, wireNames(config.serviceName).sourceApi, NO_MORE_RETRIES);
    return final;
  });
}
