// The acts the audit log records (SPEC §15), and what a route declares to have its act recorded.
import type { FastifyRequest } from 'fastify';

export const AUDIT_ACTIONS = [
  'apiKey.created',
  'apiKey.revoked',
  'authClient.created',
  'authClient.revoked',
  'subscription.created',
  'subscription.changed',
  'subscription.deleted',
  'subscription.disabled',
  'subscription.secretRevealed',
  'subscription.secretRotated',
  'merge.created',
  'merge.undone',
  'import.started',
  'import.cancelled',
  'replay.started',
  'replay.cancelled',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditTarget {
  /** ApiKey, AuthClient, WebhookSubscription, Customer, Merge, Import. */
  type: string;
  id: string | null;
  /** What else an auditor needs (never a secret). */
  details?: Record<string, unknown>;
}

const SECRET_FIELDS = new Set(['bearerToken', 'basicPassword', 'signingSecret', 'clientSecret', 'clientKey', 'key']);

/**
 * The password of a URL's userinfo (`scheme://user:password@`: up to the last "@" before the authority ends, as the
 * URL parser takes it). Migration 064 redacts the rows written before with the same pattern.
 */
const URL_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^:/?#]*):[^/?#]*@/i;

/** A broker URL's password shows as *** in details, as the subscription API shows it (docs/destinations.md). */
const withoutPassword = (v: unknown) => (typeof v === 'string' ? v.replace(URL_PASSWORD, '$1:***@') : v);

/**
 * The fields a request body changes, with secret values replaced by "[redacted]" (for details), in nested objects too
 * (a subscription's oauth2.clientSecret, tls.clientKey), and a URL's password by ***.
 */
export function changesOf(body: unknown): Record<string, unknown> {
  if (!body || typeof body !== 'object') return {};
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, SECRET_FIELDS.has(k) ? '[redacted]' : v && typeof v === 'object' && !Array.isArray(v) ? changesOf(v) : withoutPassword(v)]));
}

/**
 * On a RouteDef: `audit: { action, target: (req, body) => ({ type, id }) }`. The handler records it in the act's own
 * transaction (auditOf(req), src/audit/record.ts), from the request and its answer (newest shape); target returning
 * null records nothing (a dry run). An answer replayed for an Idempotency-Key is not a new act: not recorded again.
 */
export interface AuditDecl {
  action: AuditAction;
  target: (req: FastifyRequest, body: any) => AuditTarget | null;
}
