// OAuth2 client credentials for receivers (RFC 6749 §4.4; docs/receiver-auth.md): a subscription's bearer token,
// fetched from its token endpoint (client authentication by HTTP Basic, §2.3.1; a form body with grant_type, scope
// and audience), kept in this process per subscription until shortly before expires_in ends, one fetch at a time
// per subscription. A fetch that gives no usable token is a reason (the attempt fails with OAUTH_TOKEN_FAILED, or
// BLOCKED_ADDRESS when the address guard refused the token endpoint), never an exception and never a wait beyond the
// webhook deadline.
import { request, type Dispatcher } from 'undici';
import type { Claimed } from './claimed.ts';
import { connectUnanswered, ProxyError, throughProxy } from './proxy.ts';

/** `blocked`: the address guard refused the token endpoint's address (the attempt is BLOCKED_ADDRESS, as an HTTP target's). */
export type TokenResult = { ok: true; token: string } | { ok: false; reason: string; blocked?: boolean };

/** Largest token response read. */
const MAX_TOKEN_RESPONSE = 64 * 1024;
/** Lifetime assumed when the answer has no expires_in (RFC 6749 §5.1 leaves it to the server's documentation). */
export const DEFAULT_LIFETIME_SEC = 300;
/** The longest a token is kept, whatever expires_in says (1e300 kept one for ever). */
export const MAX_LIFETIME_SEC = 86_400;
/** A token is used until this much before it expires: a tenth of its lifetime, at most a minute. */
export const refreshMarginMs = (lifetimeMs: number) => Math.min(60_000, lifetimeMs / 10);
/** Tokens must be sendable in a header unchanged (RFC 6750 b64token is narrower; visible ASCII is what we can send). */
const HEADER_SAFE = /^[\x21-\x7e]+$/;

interface Entry {
  /** The settings the token was fetched with: a change (PATCH) fetches anew. */
  key: string;
  token?: string;
  /** Date.now() after which the token is not used. */
  usableUntil: number;
  pending?: Promise<TokenResult>;
}

/** application/x-www-form-urlencoded, as RFC 6749 §2.3.1 asks of the client id and secret before Basic. */
export const formEncode = (s: string) => new URLSearchParams({ x: s }).toString().slice(2);

/** The "id:secret" a token request's Basic header carries in base64 (redact.ts redacts it in every form). */
export const basicCredential = (clientId: string, clientSecret: string) => `${formEncode(clientId)}:${formEncode(clientSecret)}`;

/** How token requests leave (the Sender: its address guard and its token pool, through the proxy if one is set). */
export interface TokenTransport {
  /** Why the token URL may not be used (its host, its scheme), or null; `blocked`: the address guard's refusal. */
  tokenRefusal(url: string): { reason: string; blocked: boolean } | null;
  tokenPool(): Dispatcher;
  /**
   * Through BULB_WEBHOOK_PROXY: the CONNECT target ("<ip>:<port>") of a tunnel to this token URL that the proxy has not
   * answered yet, if any (a request timed out waiting for the proxy, not for the token endpoint).
   */
  tokenProxyWait?(url: string): string | undefined;
}

export class TokenSource {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly sender: TokenTransport, private readonly timeoutMs: number) {}

  /**
   * The subscription's token: the cached one while usable, else one fetch (shared by the attempts that wait for it)
   * with a deadline of at most `timeoutMs`.
   */
  get(c: Claimed, timeoutMs = this.timeoutMs): Promise<TokenResult> {
    const key = settingsKey(c);
    let e = this.entries.get(c.subscription_id);
    if (!e || e.key !== key) {
      e = { key, usableUntil: 0 };
      this.entries.set(c.subscription_id, e);
    }
    if (e.token !== undefined && Date.now() < e.usableUntil) return Promise.resolve({ ok: true, token: e.token });
    if (e.pending) return e.pending;
    const entry = e;
    entry.pending = this.fetch(c, Math.max(1, Math.min(timeoutMs, this.timeoutMs))).then((r) => {
      entry.pending = undefined;
      if (r.ok) {
        entry.token = r.token;
        entry.usableUntil = r.usableUntil;
        return { ok: true as const, token: r.token };
      }
      entry.token = undefined;
      return r;
    });
    return entry.pending;
  }

  /** The receiver refused `token` (401): forget it, unless another attempt has fetched a newer one meanwhile. */
  invalidate(subscriptionId: string, token: string): void {
    const e = this.entries.get(subscriptionId);
    if (e?.token === token) {
      e.token = undefined;
      e.usableUntil = 0;
    }
  }

  /** Forgets subscriptions no lane serves any more. */
  retain(live: (subscriptionId: string) => boolean): void {
    for (const id of this.entries.keys()) if (!live(id)) this.entries.delete(id);
  }

  private async fetch(c: Claimed, timeoutMs: number): Promise<({ ok: true; token: string; usableUntil: number }) | { ok: false; reason: string; blocked?: boolean }> {
    const url = c.oauth2_token_url!;
    const fail = (why: string, blocked = false) => ({ ok: false as const, reason: `token endpoint ${url}: ${why}`, ...(blocked ? { blocked } : {}) });
    const refused = this.sender.tokenRefusal(url);
    if (refused) return fail(refused.reason, refused.blocked);
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (c.oauth2_scope) form.set('scope', c.oauth2_scope);
    if (c.oauth2_audience) form.set('audience', c.oauth2_audience);
    const basic = Buffer.from(basicCredential(c.oauth2_client_id ?? '', c.oauth2_client_secret ?? '')).toString('base64');
    const startedAt = Date.now();
    let status: number;
    let text: string;
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.sender.tokenPool(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: `Basic ${basic}` },
        body: form.toString(),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = res.statusCode;
      const chunks: Buffer[] = [];
      let n = 0;
      for await (const chunk of res.body) {
        n += chunk.length;
        if (n > MAX_TOKEN_RESPONSE) {
          res.body.destroy();
          return fail(`answer larger than ${MAX_TOKEN_RESPONSE} bytes`);
        }
        chunks.push(chunk);
      }
      text = Buffer.concat(chunks).toString('utf8');
    } catch (err: any) {
      const code = codeOf(err);
      // A name whose address the guard refused at connect time (an IP literal is refused above, before connecting).
      if (code === 'EBLOCKEDADDRESS') return fail(deepest(err), true);
      // The proxy connector's deadline (it may pass before the request's own) is a deadline passed too.
      if (err?.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || proxyErrorOf(err)?.code === 'UND_ERR_CONNECT_TIMEOUT') {
        return fail(this.timeoutReason(url, err, timeoutMs));
      }
      return fail(`${code || 'error'}: ${deepest(err)}`);
    }
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (status < 200 || status >= 300) {
      // RFC 6749 §5.2: error, error_description.
      const detail = json && typeof json.error === 'string' ? `${json.error}${typeof json.error_description === 'string' ? ` (${json.error_description})` : ''}` : text.slice(0, 512);
      return fail(`answered ${status}${detail ? `: ${detail}` : ''}`);
    }
    if (json === undefined || json === null || typeof json !== 'object') return fail('the answer is not a JSON object');
    if (typeof json.access_token !== 'string' || json.access_token === '') return fail('the answer has no access_token');
    if (!HEADER_SAFE.test(json.access_token)) return fail('the access_token is not visible ASCII (cannot be sent in a header)');
    if (json.token_type !== undefined && String(json.token_type).toLowerCase() !== 'bearer') {
      // Shown whole or not at all: a value cut mid-text kept the start of a secret it echoed, which redaction (of whole
      // values, and of a start only at a text's end) cannot tell from text (found by a probe).
      const type = String(json.token_type);
      return fail(type.length <= 40 ? `token_type "${type}" is not Bearer` : `token_type (${type.length} characters) is not Bearer`);
    }
    // A number is the token's lifetime: 0 or less, already expired (sent by the attempts that waited for this answer,
    // then fetched anew: taken as absent, it was kept 270 s and each later delivery went out with it first, to a 401);
    // absent (or not a number), DEFAULT_LIFETIME_SEC; at most MAX_LIFETIME_SEC.
    const expiresIn = typeof json.expires_in === 'number' || typeof json.expires_in === 'string' ? Number(json.expires_in) : NaN;
    const lifetimeMs = json.expires_in === undefined || json.expires_in === '' || Number.isNaN(expiresIn)
      ? DEFAULT_LIFETIME_SEC * 1000
      : Math.max(0, Math.min(expiresIn, MAX_LIFETIME_SEC)) * 1000;
    // Counted from before the request: the server's clock started no earlier.
    return { ok: true, token: json.access_token, usableUntil: startedAt + lifetimeMs - refreshMarginMs(lifetimeMs) };
  }

  /**
   * Why a token request timed out. Through a proxy that has not answered the CONNECT for it: the proxy's wait, said as
   * an HTTP attempt's and a broker's are (until 2026-11-30 it said "UND_ERR_CONNECT_TIMEOUT: …" or, when the request's
   * own deadline passed first, "no answer within … ms", which blamed a token endpoint never reached). A headers or
   * body timeout had its connection: not the proxy's wait. Neither names the proxy's URL or credentials.
   */
  private timeoutReason(url: string, err: any, timeoutMs: number): string {
    const waiting = err?.name === 'TimeoutError' ? this.sender.tokenProxyWait?.(url) : undefined;
    if (waiting) return throughProxy(connectUnanswered(waiting, timeoutMs));
    const proxied = proxyErrorOf(err);
    if (proxied?.code === 'UND_ERR_CONNECT_TIMEOUT') return throughProxy(proxied.message);
    return `no answer within ${timeoutMs} ms`;
  }
}

/** A token is for the settings it was fetched with and the receiver's origin it was fetched for (another: fetched anew). */
function settingsKey(c: Claimed): string {
  return JSON.stringify([c.oauth2_token_url, c.oauth2_client_id, c.oauth2_client_secret, c.oauth2_scope, c.oauth2_audience, originOf(c.url)]);
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** The proxy connector's own error in err's causes, if any. */
function proxyErrorOf(err: any): ProxyError | undefined {
  for (let e = err, i = 0; e && i < 5; e = e.cause, i++) if (e instanceof ProxyError) return e;
  return undefined;
}

function codeOf(err: any): string {
  for (let e = err, i = 0; e && i < 5; e = e.cause, i++) if (typeof e.code === 'string') return e.code;
  return '';
}

/** The innermost message (undici wraps the connect error: "fetch failed" says nothing). */
function deepest(err: any): string {
  let m = String(err?.message ?? err);
  for (let e = err?.cause, i = 0; e && i < 5; e = e.cause, i++) if (e.message) m = String(e.message);
  return m;
}
