// Builds one webhook request: the event body (exact bytes), and every header, signed with each valid secret.
import { createRequire } from 'node:module';
import { isoNN } from '../http/time.ts';
import { hmacBytes, signatureHeaderOf, standardMac } from './signing.ts';
import type { Claimed } from './claimed.ts';

const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };
export const USER_AGENT = `Bulb-Webhooks/${pkg.version}`;

/** The event body, fields in the seed's order. */
export function eventBody(c: Pick<Claimed, 'event_uuid' | 'subscription_uuid' | 'event_created_at' | 'event_type' | 'resource_type' | 'resource_uuid' | 'resource_external_id' | 'source'>): string {
  return JSON.stringify({
    uuid: c.event_uuid,
    subscription: c.subscription_uuid,
    createdAt: isoNN(c.event_created_at),
    eventType: c.event_type,
    resourceType: c.resource_type,
    resource: { uuid: c.resource_uuid, externalId: c.resource_external_id },
    source: c.source,
  });
}

export interface BuiltRequest {
  body: string;
  headers: Record<string, string>;
  /** The same headers with credentials redacted, for the logs. */
  logHeaders: Record<string, string>;
  /** The credential in the Authorization header (a bearer token, Basic's base64), or null: redacted from the logs. */
  credential: string | null;
  /**
   * What the signing added, for the attempt's lean record (attempt-request.ts): the hex HMAC and each Standard Webhooks
   * signature as bytes, in the headers' order, in hex; and the webhook-timestamp (s). Absent: nothing was signed.
   */
  signed?: { signatures: string; timestamp: number };
}

export const REDACTED = '[redacted]';

/** oauth2Token: the bearer token of an OAUTH2_CLIENT_CREDENTIALS subscription (fetched by oauth2.ts). */
export function buildRequest(c: Claimed, hmacHeaderName: string, nowMs = Date.now(), oauth2Token?: string): BuiltRequest {
  const body = eventBody(c);
  const timestamp = Math.floor(nowMs / 1000);
  // SPEC §7 rotation: one Standard Webhooks signature per valid secret (current first); the hex header is
  // keyed with the oldest still-valid secret, so a receiver checking only it keeps working for 24 h.
  const previous = c.previous_secrets ?? [];
  const secrets = [c.signing_secret, ...[...previous].reverse()];
  const hexSecret = previous.length > 0 ? previous[0] : c.signing_secret;
  const hex = hmacBytes(hexSecret, body);
  const macs = secrets.map((s) => standardMac(s, c.event_uuid, timestamp, body));
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    Accept: 'application/json',
    'User-Agent': USER_AGENT,
    [hmacHeaderName]: hex.toString('hex'),
    'X-Webhook-Version': c.webhook_version,
    'webhook-id': c.event_uuid,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeaderOf(macs),
  };
  const signed = { signatures: Buffer.concat([hex, ...macs]).toString('hex'), timestamp };
  // Without credentials the logged headers are the sent ones (neither is changed afterwards).
  if (c.auth_method === 'BEARER' && c.bearer_token) {
    return { body, headers: { ...headers, Authorization: `Bearer ${c.bearer_token}` }, logHeaders: { ...headers, Authorization: `Bearer ${REDACTED}` }, credential: c.bearer_token, signed };
  }
  if (c.auth_method === 'OAUTH2_CLIENT_CREDENTIALS' && oauth2Token) {
    return { body, headers: { ...headers, Authorization: `Bearer ${oauth2Token}` }, logHeaders: { ...headers, Authorization: `Bearer ${REDACTED}` }, credential: oauth2Token, signed };
  }
  if (c.auth_method === 'BASIC' && c.basic_username !== null) {
    const basic = Buffer.from(`${c.basic_username}:${c.basic_password ?? ''}`).toString('base64');
    return { body, headers: { ...headers, Authorization: `Basic ${basic}` }, logHeaders: { ...headers, Authorization: `Basic ${REDACTED}` }, credential: basic, signed };
  }
  return { body, headers, logHeaders: headers, credential: null, signed };
}
