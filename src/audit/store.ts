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

/** Newest first; `before` is the id of the last row of the previous page. */
export async function listAudit(db: Queryable, q: AuditQuery, before: string | null): Promise<AuditRow[]> {
  const r = await db.query<AuditRow>(
    `SELECT id, uuid, created_at, actor_type, actor_uuid, actor_name, action, target_type, target_id, ip_address, details
     FROM audit_log
     WHERE ($1::text IS NULL OR action = $1) AND ($2::text IS NULL OR actor_type = $2) AND ($3::uuid IS NULL OR actor_uuid = $3)
       AND ($4::text IS NULL OR actor_name = $4) AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::bigint IS NULL OR id < $6)
     ORDER BY id DESC LIMIT $7`,
    [q.action ?? null, q.actorType ?? null, q.actorUuid ?? null, q.actorName ?? null, q.since ?? null, before, q.limit + 1],
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
