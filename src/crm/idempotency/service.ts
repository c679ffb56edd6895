// Idempotency-Key (used by every merge door): the first successful answer to (principal, key) is
// stored in the transaction of the change and replayed, status and body, for 24 hours. The same key
// with a different request (route, version, path, query or body) answers 409 Conflict. Failed
// requests and dry runs are not stored (their transaction rolls back), so they can be retried.
import crypto from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Queryable } from '../../db/db.ts';
import { conflict, invalid } from '../../http/errors.ts';
import * as store from './store.ts';

export const HEADER = 'idempotency-key';

export interface IdemKey {
  principal: string;
  key: string;
  hash: string;
}

/** The request's key, if it sent one (400 when malformed). */
export function keyOf(req: FastifyRequest): IdemKey | undefined {
  const raw = req.headers[HEADER];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || raw.length < 1 || raw.length > 255 || !/^[\x21-\x7e]+$/.test(raw)) {
    throw invalid('Idempotency-Key must be 1–255 visible ASCII characters', 'Idempotency-Key');
  }
  const { routeId, apiVersion } = req.routeOptions.config;
  const hash = crypto
    .createHash('sha256')
    .update(JSON.stringify([routeId, apiVersion, req.params, req.query, req.body]))
    .digest('hex');
  return { principal: req.principal?.uuid ?? 'anonymous', key: raw, hash };
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
    if (stored.request_hash !== key.hash) throw conflict('this Idempotency-Key was used with a different request', 'Idempotency-Key');
    return { status: stored.status, body: stored.body, replayed: true };
  }
  const answer = await fn();
  await store.complete(tx, key.principal, key.key, answer.status, answer.body);
  return { ...answer, replayed: false };
}
