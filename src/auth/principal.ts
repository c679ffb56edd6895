// Who is calling, and what the scopes allow (SPEC §3).
import type { Scope } from '../http/versioning/route.ts';

export const SCOPES: readonly Scope[] = ['read', 'write', 'admin'];

export interface Principal {
  kind: 'apiKey' | 'oauth';
  /** uuid of the API key or auth client. */
  uuid: string;
  scopes: Scope[];
}

/** read ⊂ write ⊂ admin. */
export function allows(principal: Principal, needed: Scope): boolean {
  const has = new Set(principal.scopes);
  if (has.has('admin')) return true;
  if (needed === 'read') return has.has('read') || has.has('write');
  if (needed === 'write') return has.has('write');
  return false;
}
