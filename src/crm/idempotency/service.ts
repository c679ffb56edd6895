// Idempotency-Key (every merge door, undo, replays, and the creates of customers, their data and subscriptions): the
// first successful answer to (principal, key) is stored in the transaction of the change and replayed, status and
// body, for 24 hours. The same key
// with a different request (route, version, path, query or body, whatever the order of their members) answers 409 Conflict. Failed
// requests and dry runs are not stored (their transaction rolls back), so they can be retried.
import crypto from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { withRetry, type Db, type Queryable } from '../../db/db.ts';
import { conflict, invalid } from '../../http/errors.ts';
import * as store from './store.ts';

export const HEADER = 'idempotency-key';

export interface IdemKey {
  principal: string;
  key: string;
  hash: string;
  /** The fingerprint as stored before 2026-11-29 (the members in the order sent), still matched for 24 h of keys. */
  legacyHash: string;
}

/** The value with every object's members in code-unit order: the same request whatever order its JSON was written in. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) Object.defineProperty(out, k, { value: canonical((v as Record<string, unknown>)[k]), enumerable: true });
  return out;
}

const sha256 = (v: unknown) => crypto.createHash('sha256').update(JSON.stringify(v)).digest('hex');

/** The request's key, if it sent one (400 when malformed). */
export function keyOf(req: FastifyRequest): IdemKey | undefined {
  const raw = req.headers[HEADER];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || raw.length < 1 || raw.length > 255 || !/^[\x21-\x7e]+$/.test(raw)) {
    throw invalid('Idempotency-Key must be 1–255 visible ASCII characters', 'Idempotency-Key');
  }
  const { routeId, apiVersion, noBody } = req.routeOptions.config;
  // A client that rebuilds its request on retry may write the members in another order: the same request (a replay
  // retried with its keys reordered was a 409; found by a probe). A route that takes no body takes none, null and {}
  // alike (an undo retried with {} was a 409 against its own key).
  const request = [routeId, apiVersion, req.params, req.query, noBody ? null : req.body];
  return { principal: req.principal?.uuid ?? 'anonymous', key: raw, hash: sha256(canonical(request)), legacyHash: sha256(request) };
}

export interface Answer {
  status: number;
  body: unknown;
  replayed: boolean;
}

/** Runs fn in tx under the key (if any): replays a stored answer instead of running fn twice. */
export async function idempotent(tx: Queryable, key: IdemKey | undefined, fn: () => Promise<{ status: number; body: unknown }>): Promise<Answer> {
  if (!key) return { ...(await fn()), replayed: false };
  const stored = await store.claim(tx, key.principal, key.key, key.hash);
  if (stored) {
    if (stored.request_hash !== key.hash && stored.request_hash !== key.legacyHash) throw conflict('this Idempotency-Key was used with a different request', 'Idempotency-Key');
    return { status: stored.status, body: stored.body, replayed: true };
  }
  const answer = await fn();
  await store.complete(tx, key.principal, key.key, answer.status, answer.body);
  return { ...answer, replayed: false };
}

/** How a create's answer is kept under its key when part of it must not be stored there (a signing secret). */
export interface KeptAs<T> {
  stored(body: T): T;
  replayed(body: T): Promise<T>;
}

/**
 * A create answered `status`, run once per Idempotency-Key when the request sent one: `work` runs in a retried
 * transaction with the key's claim, and a retry with the key gets the first answer back, marked
 * Idempotent-Replayed (a retried create made a second customer, order or subscription; found by a probe). Without a
 * key, `unkeyed` runs as the route always ran (its own statement or transaction).
 */
export async function createOnce<T>(db: Db, req: FastifyRequest, reply: FastifyReply, status: number, work: (tx: Queryable) => Promise<T>, unkeyed: () => Promise<T> = () => withRetry(db, work), kept?: KeptAs<T>): Promise<T> {
  const key = keyOf(req);
  if (!key) {
    const body = await unkeyed();
    reply.code(status);
    return body;
  }
  let made: T | undefined;
  const answer = await withRetry(db, (tx) => idempotent(tx, key, async () => {
    made = await work(tx);
    return { status, body: kept ? kept.stored(made) : made };
  }));
  if (answer.replayed) reply.header('idempotent-replayed', 'true');
  reply.code(answer.status);
  if (!answer.replayed) return made!;
  return kept ? kept.replayed(answer.body as T) : (answer.body as T);
}
