// SQL of the audit log: append one row (the actor's name looked up as it is now), list with filters.
import type { Queryable } from '../db/db.ts';
import type { AuditAction } from './actions.ts';

export type Actor = { type: 'apiKey' | 'authClient'; uuid: string } | { type: 'system' };
export const SYSTEM: Actor = { type: 'system' };

export interface AuditEntry {
  actor: Actor;
  action: AuditAction;
  targetType: string;
  targetId: string | null;
  ip: string | null;
  details?: Record<string, unknown>;
}

/** Appends one row; call it inside the act's transaction (system acts) or right after the act succeeded. */
export async function appendAudit(db: Queryable, e: AuditEntry): Promise<void> {
  const uuid = e.actor.type === 'system' ? null : e.actor.uuid;
  await db.query(
    `INSERT INTO audit_log (actor_type, actor_uuid, actor_name, action, target_type, target_id, ip_address, details)
     VALUES ($1, $2::uuid,
       CASE $1 WHEN 'apiKey' THEN (SELECT name FROM api_keys WHERE uuid = $2::uuid)
               WHEN 'authClient' THEN (SELECT name FROM auth_clients WHERE uuid = $2::uuid) END,
       $3, $4, $5, $6, $7)`,
    [e.actor.type, uuid, e.action, e.targetType, e.targetId, e.ip, JSON.stringify(e.details ?? {})],
  );
}

export interface AuditRow {
  id: string;
  uuid: string;
  created_at: string;
  actor_type: 'apiKey' | 'authClient' | 'system';
  actor_uuid: string | null;
  actor_name: string | null;
  action: string;
  target_type: string;
  target_id: string | null;
  ip_address: string | null;
  details: Record<string, unknown>;
}

export interface AuditQuery {
  action?: string;
  actorType?: string;
  actorUuid?: string;
  actorName?: string;
  since?: string;
  limit: number;
}

/**
 * How far before `since` the row bounding a page's walk was written (listAudit): an act's id and its created_at are
 * taken together as its row is formed, so an act written at or after `since` has a larger id than every act written
 * this long before it, unless its clock reading came more than this after its id (a clock stepped backwards).
 */
const SINCE_MARGIN = "interval '1 minute'";

/**
 * Newest first; `before` is the id of the last row of the previous page.
 *
 * Each combination of filters reads the index that holds its rows in id order, and only it: the filter that leads the
 * index is written as `= ANY` and the page ordered by it, which no other index gives without reading every match to
 * sort them. Written as plain filters under ORDER BY id, the planner multiplied their shares, and when two filters
 * were each common (an integration's key, imports), or one was common in the log but not lately, walked the primary
 * key newest first for a page of matches: the whole log for none (400,021 rows at 800,000; a probe, 2026-11-30).
 * `since` bounds the walk by id too: above the id of the last act written a minute (SINCE_MARGIN) before it (on
 * created_at's index), so a page of a filter with no act since reads what is newer than `since`, not the log.
 */
export async function listAudit(db: Queryable, q: AuditQuery, before: string | null): Promise<AuditRow[]> {
  const params: unknown[] = [];
  const p = (v: unknown) => (params.push(v), `$${params.length}`);
  const where: string[] = [];
  let order = 'id DESC';
  if (q.action !== undefined) {
    // audit_log_action (action, id); with an actor, audit_log_action_actor(_name) (action, actor, id), or the system's
    // audit_log_system_action (action, id) (migrations 008, 081).
    where.push(`action = ANY (${p([q.action])}::text[])`);
    order = 'action DESC, id DESC';
    if (q.actorUuid !== undefined) where.push(`actor_uuid = ${p(q.actorUuid)}::uuid`);
    if (q.actorName !== undefined) where.push(`actor_name = ${p(q.actorName)}`);
  } else if (q.actorUuid !== undefined) {
    where.push(`actor_uuid = ANY (${p([q.actorUuid])}::uuid[])`); // audit_log_actor (actor_uuid, id)
    order = 'actor_uuid DESC, id DESC';
  } else if (q.actorName !== undefined) {
    where.push(`actor_name = ANY (${p([q.actorName])}::text[])`); // audit_log_actor_name (actor_name, id)
    order = 'actor_name DESC, id DESC';
  }
  // The only actor type asked for alone; a literal, which the partial indexes' predicate matches.
  if (q.actorType === 'system') where.push(`actor_type = 'system'`);
  else if (q.actorType !== undefined) where.push(`actor_type = ${p(q.actorType)}`);
  if (q.since !== undefined) {
    const since = p(q.since);
    where.push(`created_at >= ${since}::timestamptz`);
    where.push(`id > coalesce((SELECT b.id FROM audit_log b WHERE b.created_at < ${since}::timestamptz - ${SINCE_MARGIN} ORDER BY b.created_at DESC LIMIT 1), 0)`);
  }
  if (before !== null) where.push(`id < ${p(before)}::bigint`);
  const r = await db.query<AuditRow>(
    `SELECT id, uuid, created_at, actor_type, actor_uuid, actor_name, action, target_type, target_id, ip_address, details
     FROM audit_log ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
     ORDER BY ${order} LIMIT ${p(q.limit + 1)}`,
    params,
  );
  return r.rows;
}

/** System act: subscriptions Bulb disabled automatically (SPEC §11), one row each, in the disabling transaction. */
export async function auditSubscriptionsDisabled(db: Queryable, subscriptionIds: string[]): Promise<void> {
  if (subscriptionIds.length === 0) return;
  await db.query(
    `INSERT INTO audit_log (actor_type, action, target_type, target_id, details)
     SELECT 'system', 'subscription.disabled', 'WebhookSubscription', s.uuid::text, jsonb_build_object('reason', s.disabled_reason)
     FROM webhook_subscriptions s WHERE s.id = ANY($1::bigint[]) ORDER BY s.id`,
    [subscriptionIds],
  );
}
