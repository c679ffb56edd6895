// The rules for a subscription's receiver authentication beyond Basic and Bearer (docs/receiver-auth.md): OAuth2
// client credentials (`oauth2`, with authMethod OAUTH2_CLIENT_CREDENTIALS) and mutual TLS (`tls`, with any
// authMethod). Bad input is a 400 naming the field ("oauth2.tokenUrl", "tls.clientKey", …); on a change, an
// omitted write-only value (client secret, private key) keeps the stored one.
import crypto from 'node:crypto';
import { ApiError, invalid } from '../http/errors.ts';
import { checkHost } from './address.ts';
import type { AuthMethodName, ReceiverAuthWrite, SubscriptionRow } from './store.ts';
import { destinationKind, URL_UNSAFE } from './destinations/url.ts';

export const OAUTH2 = 'OAUTH2_CLIENT_CREDENTIALS';

export interface OAuth2Input {
  tokenUrl: string;
  clientId: string;
  clientSecret?: string;
  scope?: string | null;
  audience?: string | null;
}
export interface TlsInput {
  clientCertificate: string;
  clientKey?: string;
  caCertificate?: string | null;
}

/** What the API shows of a row: the settings without the client secret and the private key. */
export function shapeReceiverAuth(r: SubscriptionRow) {
  return {
    oauth2: r.auth_method === OAUTH2 && r.oauth2_token_url !== null
      ? { tokenUrl: r.oauth2_token_url, clientId: r.oauth2_client_id!, scope: r.oauth2_scope, audience: r.oauth2_audience }
      : null,
    tls: r.tls_client_certificate !== null ? { clientCertificate: r.tls_client_certificate, caCertificate: r.tls_ca_certificate } : null,
  };
}

/**
 * The token URL: a URL, https (http only with BULB_WEBHOOK_ALLOW_PRIVATE, for development), no userinfo, and (unless
 * private addresses are allowed) no host that is or resolves to a blocked address: the same guard as the target's.
 * Asynchronous (DNS): called before the write's transaction.
 */
export async function checkTokenUrl(raw: string, allowPrivate: boolean): Promise<void> {
  const f = 'oauth2.tokenUrl';
  if (URL_UNSAFE.test(raw)) throw invalid(`"${f}" must not contain spaces or control characters (percent-encode them)`, f);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw invalid(`"${f}" is not a valid URL`, f);
  }
  if (u.protocol !== 'https:' && !(allowPrivate && u.protocol === 'http:')) {
    throw invalid(`"${f}" must use https (http only with BULB_WEBHOOK_ALLOW_PRIVATE=true, for development)`, f);
  }
  if (u.username || u.password) throw invalid(`"${f}" must not carry credentials; give clientId and clientSecret`, f);
  if (u.port === '0') throw invalid(`"${f}" must not name port 0`, f);
  if (allowPrivate) return;
  const r = await checkHost(u.hostname);
  if (r.blocked) throw invalid(`"${f}" is not allowed: ${r.blocked} (set BULB_WEBHOOK_ALLOW_PRIVATE=true to allow private and loopback addresses, for development only)`, f);
  if (r.unresolvable) throw invalid(`"${f}" is not reachable: ${r.unresolvable}`, f);
}

const VISIBLE = /^[\x21-\x7e]+$/;
const NO_CONTROL = /^[^\x00-\x1f\x7f]+$/;
/** RFC 6749 §3.3: scope-tokens (%x21 / %x23-5B / %x5D-7E) separated by single spaces. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;
const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

type Problem = { message: string; moreInfo: string };

/**
 * The OAuth2 and TLS settings to store, from the request (undefined: not given) and the current row (a change) or
 * none (a create). Synchronous: checkTokenUrl has checked a given token URL.
 */
export function receiverAuthRules(method: AuthMethodName, url: string, input: { oauth2?: OAuth2Input | null; tls?: TlsInput | null }, cur?: SubscriptionRow): ReceiverAuthWrite {
  const errs: Problem[] = [];
  const oauth2 = method === OAUTH2 ? oauth2Rules(input.oauth2, cur, errs) : null;
  const tls = tlsRules(input.tls, cur, errs);
  // A stored client key is kept only for the origin it was given for, as the other credentials are (docs/security.md):
  // it authenticated Bulb to any host a change of URL named (found by a probe).
  if (cur?.tls_client_key && input.tls !== null && input.tls?.clientKey === undefined && !sameOrigin(url, cur.url)) {
    errs.push({ message: '"tls" with its "clientKey" must be given again when "url" names another origin: the stored key stays with the receiver it was given for (or "tls": null to remove it; fields of version 2026-11, where this change is made)', moreInfo: 'tls.clientKey' });
  }
  // Mutual TLS needs a connection that is TLS: https (sender.ts), amqps, or nats, which then requires TLS of the
  // server (destinations/). Over plain http or amqp no client certificate would be presented, so `tls` (given, or
  // kept by a change of URL) is refused there: never silently dropped, the receiver would get unauthenticated deliveries.
  const protocol = new URL(url).protocol;
  if (tls !== null && protocol !== 'https:' && protocol !== 'amqps:' && protocol !== 'nats:') {
    const plain = destinationKind(url) === 'http' ? 'http' : 'amqp';
    errs.push({ message: `"tls" (mutual TLS) needs a TLS connection: over plain ${plain} no client certificate is presented; give an ${plain}s "url", or "tls": null to remove it`, moreInfo: 'tls' });
  }
  if (errs.length) throw ApiError.many('InvalidParameterError', errs);
  return { oauth2, tls };
}

function oauth2Rules(given: OAuth2Input | null | undefined, cur: SubscriptionRow | undefined, errs: Problem[]): ReceiverAuthWrite['oauth2'] {
  const stored = cur?.auth_method === OAUTH2 && cur.oauth2_token_url !== null && cur.oauth2_client_secret !== null ? cur : undefined;
  if (given === undefined && stored) {
    return { tokenUrl: stored.oauth2_token_url!, clientId: stored.oauth2_client_id!, clientSecret: stored.oauth2_client_secret!, scope: stored.oauth2_scope, audience: stored.oauth2_audience };
  }
  if (!given) {
    errs.push({ message: `"oauth2" (tokenUrl, clientId, clientSecret) is required when authMethod is ${OAUTH2}`, moreInfo: 'oauth2' });
    return null;
  }
  // The stored secret is kept only for the token endpoint it was given for: one of another origin gets it again (an
  // admin, who cannot read the secret, could otherwise send it to a host of their choosing).
  if (given.clientSecret === undefined && stored && !sameOrigin(given.tokenUrl, stored.oauth2_token_url!)) {
    errs.push({ message: '"oauth2.clientSecret" must be given again when "oauth2.tokenUrl" names another origin: the stored secret stays with the token endpoint it was given for', moreInfo: 'oauth2.clientSecret' });
  }
  const clientSecret = given.clientSecret ?? stored?.oauth2_client_secret;
  if (!NO_CONTROL.test(given.clientId)) errs.push({ message: '"oauth2.clientId" must not contain control characters', moreInfo: 'oauth2.clientId' });
  if (clientSecret === undefined || clientSecret === null) errs.push({ message: '"oauth2.clientSecret" is required when OAuth2 is first set', moreInfo: 'oauth2.clientSecret' });
  else if (!VISIBLE.test(clientSecret)) errs.push({ message: '"oauth2.clientSecret" must be visible ASCII (no spaces, CR/LF, control or non-ASCII characters)', moreInfo: 'oauth2.clientSecret' });
  if (given.scope != null && !SCOPE.test(given.scope)) errs.push({ message: '"oauth2.scope" must be scope tokens (visible ASCII without " or \\) separated by single spaces (RFC 6749 §3.3)', moreInfo: 'oauth2.scope' });
  if (given.audience != null && !NO_CONTROL.test(given.audience)) errs.push({ message: '"oauth2.audience" must not contain control characters', moreInfo: 'oauth2.audience' });
  return { tokenUrl: given.tokenUrl, clientId: given.clientId, clientSecret: clientSecret ?? '', scope: given.scope ?? null, audience: given.audience ?? null };
}

/** A certificate made moments ago on a machine whose clock runs ahead is accepted. */
const CLOCK_SKEW_MS = 5 * 60_000;

function tlsRules(given: TlsInput | null | undefined, cur: SubscriptionRow | undefined, errs: Problem[]): ReceiverAuthWrite['tls'] {
  if (given === undefined) {
    return cur?.tls_client_certificate && cur.tls_client_key
      ? { clientCertificate: cur.tls_client_certificate, clientKey: cur.tls_client_key, caCertificate: cur.tls_ca_certificate }
      : null;
  }
  if (given === null) return null;
  const keyGiven = given.clientKey !== undefined;
  const clientKey = given.clientKey ?? cur?.tls_client_key ?? undefined;
  // The certificate, then the chain it may carry: every block must parse and be valid now (a bad block after the first
  // was stored, and every attempt then failed with TLS at the handshake; found by a probe).
  const chain: crypto.X509Certificate[] = [];
  let parsed = true;
  for (const block of given.clientCertificate.match(PEM_CERT) ?? []) {
    try {
      chain.push(new crypto.X509Certificate(block));
    } catch {
      parsed = false;
    }
  }
  const cert = parsed ? chain[0] : undefined;
  if (!cert) errs.push({ message: '"tls.clientCertificate" is not a PEM certificate, or chain of them (-----BEGIN CERTIFICATE----- … that parse)', moreInfo: 'tls.clientCertificate' });
  else {
    // Outside its validity every attempt would fail at the receiver's handshake: refused now, not after the retries.
    const now = Date.now();
    for (const [i, c] of chain.entries()) {
      const which = i === 0 ? '"tls.clientCertificate"' : `certificate ${i + 1} of "tls.clientCertificate"`;
      if (Date.parse(c.validTo) < now) errs.push({ message: `${which} expired on ${new Date(c.validTo).toISOString()}`, moreInfo: 'tls.clientCertificate' });
      else if (Date.parse(c.validFrom) > now + CLOCK_SKEW_MS) errs.push({ message: `${which} is not valid before ${new Date(c.validFrom).toISOString()}`, moreInfo: 'tls.clientCertificate' });
    }
  }
  let key: crypto.KeyObject | undefined;
  if (clientKey === undefined) {
    errs.push({ message: '"tls.clientKey" is required when mutual TLS is first set', moreInfo: 'tls.clientKey' });
  } else {
    try {
      key = crypto.createPrivateKey({ key: clientKey, format: 'pem' });
    } catch (err) {
      const encrypted = /ENCRYPTED/.test(clientKey) || /passphrase/i.test(String((err as Error).message));
      errs.push({
        message: encrypted ? '"tls.clientKey" is encrypted: give the private key unencrypted (it is sealed at rest)' : '"tls.clientKey" is not a PEM private key that parses',
        moreInfo: 'tls.clientKey',
      });
    }
  }
  if (cert && key && !cert.checkPrivateKey(key)) {
    errs.push({
      message: keyGiven ? '"tls.clientKey" does not match "tls.clientCertificate"' : '"tls.clientCertificate" does not match the stored private key: give its "tls.clientKey" too',
      moreInfo: 'tls.clientKey',
    });
  }
  const ca = given.caCertificate ?? null;
  if (ca !== null) {
    const blocks = ca.match(PEM_CERT);
    let ok = blocks !== null;
    for (const b of blocks ?? []) {
      try {
        new crypto.X509Certificate(b);
      } catch {
        ok = false;
      }
    }
    if (!ok) errs.push({ message: '"tls.caCertificate" is not one or more PEM certificates that parse', moreInfo: 'tls.caCertificate' });
  }
  return { clientCertificate: given.clientCertificate, clientKey: clientKey ?? '', caCertificate: ca };
}

/** Whether two URLs share scheme, host and port (what a credential is given for). */
export function sameOrigin(a: string, b: string): boolean {
  try {
    const x = new URL(a);
    const y = new URL(b);
    return x.protocol === y.protocol && x.hostname.toLowerCase() === y.hostname.toLowerCase() && x.port === y.port;
  } catch {
    return false;
  }
}
