// Redaction of credentials a receiver echoes back (SPEC §15: neither the logs API nor a database dump may reveal
// one). A response body, or an error text, is stored only after every form of the subscription's credentials that a
// receiver could plausibly send back is replaced: the bearer token, the Basic password and the decoded
// "user:password", the OAuth2 client secret (and the "id:secret" of the token request's Basic header, which a token
// endpoint may echo), the OAuth2 access tokens the attempt sent, each as sent, JSON-escaped, URL-encoded and
// form-encoded, HTML-escaped, in base64 (standard or URL-safe, padded or not) and in hex, all matched without regard
// to case (an echo upper- or lower-cased still reveals the secret).
import { memoize } from '../memo.ts';
import type { Claimed } from './claimed.ts';
import { REDACTED } from './request.ts';
import { decoded } from './destinations/url.ts';
import { basicCredential, formEncode } from './oauth2.ts';

type Credentials = Pick<Claimed, 'bearer_token' | 'basic_username' | 'basic_password' | 'oauth2_client_id' | 'oauth2_client_secret'> &
  Partial<Pick<Claimed, 'destination_password'>>;

/**
 * The secrets a request to this subscription carries in its Authorization header, its token request or its broker URL
 * (none without credentials); `tokens`: the OAuth2 access tokens the attempt sent.
 */
export function credentialsOf(c: Credentials, tokens: string[] = []): string[] {
  const out: string[] = [...tokens];
  if (c.destination_password) out.push(c.destination_password, decoded(c.destination_password)); // a broker's error text
  if (c.bearer_token) out.push(c.bearer_token);
  if (c.basic_password) out.push(c.basic_password, `${c.basic_username ?? ''}:${c.basic_password}`);
  if (c.oauth2_client_secret) {
    // As sent to the token endpoint: form-encoded (RFC 6749 §2.3.1) inside the Basic header's "id:secret".
    out.push(c.oauth2_client_secret, basicCredential(c.oauth2_client_id ?? '', c.oauth2_client_secret));
  }
  return out;
}

/** Every encoding of one secret that is redacted. */
export function variantsOf(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const b64 = bytes.toString('base64');
  const json = JSON.stringify(secret).slice(1, -1);
  const forms = [
    secret,
    json,
    json.replace(/\//g, '\\/'),
    encodeURIComponent(secret),
    encodeURI(secret),
    // Form-encoded (a query string or an x-www-form-urlencoded body: "+" for a space, !'()~ escaped) and HTML-escaped
    // (an error page quoting the header): a token with such characters was stored in clear (found by a probe).
    formEncode(secret),
    htmlEscape(secret),
    htmlEscape(secret).replace(/&#39;/g, '&#x27;'),
    b64,
    b64.replace(/=+$/, ''),
    bytes.toString('base64url'),
    bytes.toString('hex'),
  ];
  return [...new Set(forms.filter((f) => f.length > 0))];
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const htmlEscape = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** One case-insensitive pattern for every variant of every secret (longest first), per set of secrets. */
const patternOf = memoize((key: string): RegExp => {
  const secrets = JSON.parse(key) as string[];
  const all = [...new Set(secrets.flatMap(variantsOf))].sort((a, b) => b.length - a.length);
  return new RegExp(all.map(escapeRe).join('|'), 'gi');
}, 1000);

/**
 * The variants whose start is redacted at a text's end, lower-cased, longest first (per set of secrets): every secret's
 * but a decoded "user:password", whose start is the username, no secret (a body ending "…, ann" is not a cut echo).
 */
const tailVariantsOf = memoize((key: string): string[] => {
  const secrets = JSON.parse(key) as string[];
  const own = secrets.filter((s) => !secrets.some((t) => t !== s && s.endsWith(`:${t}`)));
  return [...new Set(own.flatMap(variantsOf).map((v) => v.toLowerCase()))].sort((a, b) => b.length - a.length);
}, 1000);

/** The shortest start of a secret's variant redacted at the end of a text: shorter ones cannot be told from text. */
export const PARTIAL_MIN = 3;

/**
 * `text` with every variant of `secrets` replaced by [redacted]; null stays null. A text that ends with the start of a
 * variant (of PARTIAL_MIN characters or more) has that end redacted too: a response body is kept to its first 4 KiB,
 * and an echo cut there kept the start of the secret (found by probing, 2026-11-28: 20 characters of a bearer token).
 */
export function redactCredentials(text: string | null, secrets: string[]): string | null {
  if (text === null || secrets.length === 0) return text;
  const key = JSON.stringify(secrets);
  const whole = text.replace(patternOf(key), REDACTED);
  const cut = partialTail(whole, tailVariantsOf(key));
  return cut === 0 ? whole : whole.slice(0, whole.length - cut) + REDACTED;
}

/** The length of the longest end of `text` that is the start of one of `variants` (lower-cased), or 0. */
function partialTail(text: string, variants: string[]): number {
  let best = 0;
  // Longest first: the end a variant may cover, lower-cased once.
  const end = text.slice(-Math.max(0, (variants[0]?.length ?? 0) - 1)).toLowerCase();
  for (const v of variants) {
    if (v.length <= PARTIAL_MIN) continue;
    const tail = end.slice(-(v.length - 1));
    const head = v.slice(0, PARTIAL_MIN);
    for (let i = tail.indexOf(head); i !== -1 && tail.length - i > best; i = tail.indexOf(head, i + 1)) {
      if (v.startsWith(tail.slice(i))) {
        best = tail.length - i;
        break;
      }
    }
  }
  return best;
}
