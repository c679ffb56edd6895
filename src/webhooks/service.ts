// Subscriptions and deliveries as domain operations: URL and credential rules, secrets, test events,
// manual retry and recovery. Route handlers call these; SQL lives in store.ts. An administrative act takes the
// request's audit hook and records itself in its own transaction (src/audit/record.ts).
import type { Db, Queryable } from '../db/db.ts';
import type { AuditHook } from '../audit/record.ts';
import { ApiError, invalid, notFound } from '../http/errors.ts';
import { keptSince, requeueGuard } from '../partitions/store.ts';
import { ATTEMPTS } from '../partitions/tables.ts';
import { iso, isoNN } from '../http/time.ts';
import { checkHost } from './address.ts';
import { newSigningSecret } from './signing.ts';
import { NO_MORE_RETRIES } from './schedule.ts';
import { checkPolicy } from './policy.ts';
import * as store from './store.ts';
import { dropUnopenableRetired } from '../secrets/store.ts';
import { activeBox } from '../secrets/active.ts';
import { type AttemptRow } from './attempts-store.ts';
import { attemptStats, rolledHours } from './stats-store.ts';
import { checkBrokerUrl, destinationKind, kindOfScheme, REDACTED_PASSWORD, shownUrl, splitCredential, URL_UNSAFE } from './destinations/url.ts';
import { checkTokenUrl, OAUTH2, receiverAuthRules, sameOrigin, shapeReceiverAuth } from './receiver-auth.ts';
import type { SubscriptionCreateT, SubscriptionPatchT } from './schema.ts';

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_GRACE_SEC = 24 * 3600;

/** The health object (SPEC §11): disabled only when Bulb disabled it; failing while failures follow the last success. */
export function shapeHealth(r: store.SubscriptionRow) {
  const state: 'healthy' | 'failing' | 'disabled' =
    !r.is_active && r.disabled_reason ? 'disabled' : r.consecutive_failures > 0 ? 'failing' : 'healthy';
  return {
    state,
    consecutiveFailures: r.consecutive_failures,
    lastSuccessAt: iso(r.last_success_at),
    failingSince: iso(r.failing_since),
    disabledReason: r.is_active ? null : r.disabled_reason,
  };
}

/** A subscription as the API shows it; `retryDefault`: the service's schedule, shown where it has none of its own. */
export function shapeSubscription(r: store.SubscriptionRow, retryDefault: number[]) {
  return {
    uuid: r.uuid,
    // A broker URL as the parser writes it, as splitCredential stores it: one migration 073 kept as typed (`[0:0::1]`,
    // a space in the vhost) is shown so, and can be sent back as shown.
    url: destinationKind(r.url) === 'http' ? r.url : new URL(r.url).href,
    eventTypes: r.event_types,
    isActive: r.is_active,
    authMethod: r.auth_method,
    webhookVersion: r.webhook_version,
    maxInFlight: r.max_in_flight,
    retrySchedule: r.retry_schedule ?? retryDefault,
    retryJitter: r.retry_jitter,
    maxPerSecond: r.max_per_second,
    ...shapeReceiverAuth(r),
    health: shapeHealth(r),
    createdAt: isoNN(r.created_at),
    updatedAt: isoNN(r.updated_at),
  };
}

/** A stored secret that cannot be opened: 409 naming it and how to replace it (nothing changed). */
function unreadable(field: string, why: string, fix: string): ApiError {
  return new ApiError('Conflict', `the stored ${field} of this subscription cannot be opened (${why}): ${fix}`, field);
}

export function shapeSecret(r: store.SubscriptionRow) {
  const why = r.unreadable.signingSecret;
  if (why) throw unreadable('signingSecret', why, 'rotate it (POST …/rotateSecret) to make a new one');
  return { signingSecret: r.signing_secret, previousSecretExpiresAt: iso(r.retired_secret_expires_at) };
}

/** What a refused private address says: the setting that allows it, and that it is not for production. */
const ALLOW_PRIVATE_HINT = 'set BULB_WEBHOOK_ALLOW_PRIVATE=true to allow private and loopback addresses, for development only';

/**
 * http(s) (no userinfo), or a broker destination (amqp, amqps, nats: docs/destinations.md, with its exchange or subject),
 * ≤ 2048 chars, and (unless allowed) no host that is or resolves to a private address.
 */
export async function validateUrl(raw: string, allowPrivate: boolean): Promise<void> {
  if (URL_UNSAFE.test(raw)) throw invalid('"url" must not contain spaces or control characters (percent-encode them)', 'url');
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw invalid('"url" is not a valid URL', 'url');
  }
  const kind = kindOfScheme(u.protocol);
  if (!kind) throw invalid('"url" must use http or https, or amqp, amqps or nats for a broker destination', 'url');
  if (raw.length > 2048) throw invalid('"url" must be at most 2048 characters', 'url');
  if (kind !== 'http') checkBrokerUrl(u, kind);
  else if (u.username || u.password) throw invalid('"url" must not carry credentials; use authMethod BASIC', 'url');
  if (u.port === '0') throw invalid('"url" must not name port 0 (nothing can be reached there)', 'url');
  if (allowPrivate) return;
  const r = await checkHost(u.hostname);
  if (r.blocked) throw invalid(`"url" is not allowed: ${r.blocked} (${ALLOW_PRIVATE_HINT})`, 'url');
  if (r.unresolvable) throw invalid(`"url" is not reachable: ${r.unresolvable}`, 'url');
}

type Write = store.SubscriptionWrite;

/** A broker destination's credentials are its URL's: no Authorization header to send. */
function brokerRules(w: Write): void {
  if (destinationKind(w.url) !== 'http' && w.authMethod !== 'NONE') {
    throw invalid('"authMethod" must be NONE for a broker destination (amqp, nats): its credentials go in the URL', 'authMethod');
  }
}

/** Visible ASCII only (0x21–0x7E): what can be sent in an HTTP header unchanged (SPEC §11). */
const HEADER_SAFE = /^[\x21-\x7e]+$/;

/**
 * Credentials must match the method and be sendable in a header (visible ASCII, no CR/LF; a Basic
 * username without ":"); switching method drops the other method's stored credentials (chosenMethod refuses given ones).
 */
function credentialRules(w: Write): Write {
  const errs: { message: string; moreInfo: string }[] = [];
  for (const [k, v] of [['bearerToken', w.bearerToken], ['basicUsername', w.basicUsername], ['basicPassword', w.basicPassword]] as const) {
    if (v && !HEADER_SAFE.test(v)) errs.push({ message: `"${k}" must be visible ASCII (no spaces, CR/LF, control or non-ASCII characters)`, moreInfo: k });
  }
  if (w.basicUsername?.includes(':')) errs.push({ message: '"basicUsername" must not contain ":"', moreInfo: 'basicUsername' });
  if (w.authMethod === 'BEARER' && !w.bearerToken) errs.push({ message: '"bearerToken" is required when authMethod is BEARER', moreInfo: 'bearerToken' });
  if (w.authMethod === 'BASIC') {
    if (!w.basicUsername) errs.push({ message: '"basicUsername" is required when authMethod is BASIC', moreInfo: 'basicUsername' });
    if (!w.basicPassword) errs.push({ message: '"basicPassword" is required when authMethod is BASIC', moreInfo: 'basicPassword' });
  }
  if (errs.length) throw ApiError.many('InvalidParameterError', errs);
  return {
    ...w,
    bearerToken: w.authMethod === 'BEARER' ? w.bearerToken : null,
    basicUsername: w.authMethod === 'BASIC' ? w.basicUsername : null,
    basicPassword: w.authMethod === 'BASIC' ? w.basicPassword : null,
  };
}

type CredentialField = 'bearerToken' | 'basicUsername' | 'basicPassword' | 'oauth2';
type GivenCredentials = Partial<Record<CredentialField, unknown>> & { authMethod?: store.AuthMethodName };

/** The credential fields each method sends (tls goes with any method, and is no credential of one). */
const FIELDS_OF: Record<store.AuthMethodName, readonly CredentialField[]> = {
  NONE: [], BEARER: ['bearerToken'], BASIC: ['basicUsername', 'basicPassword'], [OAUTH2]: ['oauth2'],
};

/**
 * The method a write takes: its authMethod, else the one whose credentials it gives (create and patch), else
 * `current`. A credential given (not null) that the method does not send is a 400 naming it, never silently dropped:
 * the receiver would get other credentials than asked, or none; and without authMethod, credentials of two methods
 * are a 400 naming authMethod.
 */
function chosenMethod(w: GivenCredentials, current: store.AuthMethodName): store.AuthMethodName {
  const given = Object.values(FIELDS_OF).flat().filter((f) => w[f] != null);
  const methods = (Object.keys(FIELDS_OF) as store.AuthMethodName[]).filter((m) => FIELDS_OF[m].some((f) => given.includes(f)));
  if (w.authMethod === undefined) {
    if (methods.length > 1) throw invalid(`credentials of several methods are given (${given.join(', ')}): choose one with "authMethod" and give only its credentials`, 'authMethod');
    return methods[0] ?? current;
  }
  const method = w.authMethod;
  const stray = given.filter((f) => !FIELDS_OF[method].includes(f));
  if (stray.length) {
    throw ApiError.many('InvalidParameterError', stray.map((f) => ({ message: `"${f}" is not used with authMethod ${method}: remove it, or choose the method that sends it`, moreInfo: f })));
  }
  return method;
}

/**
 * Checks a new subscription (400 for anything wrong, nothing written) and returns its write, to run in a transaction
 * (the route's, with its Idempotency-Key's claim); the answer shows the signing secret.
 */
export async function newSubscription(body: SubscriptionCreateT, allowPrivate: boolean, audit: AuditHook, retryDefault: number[]) {
  checkPolicy(body);
  await validateUrl(body.url, allowPrivate);
  const dest = splitCredential(body.url); // a broker URL's password is sealed apart; the URL shows it as ***
  if (body.oauth2) await checkTokenUrl(body.oauth2.tokenUrl, allowPrivate);
  const w = credentialRules({
    url: dest.url,
    eventTypes: body.eventTypes,
    isActive: body.isActive ?? true,
    authMethod: chosenMethod(body, 'NONE'),
    bearerToken: body.bearerToken ?? null,
    basicUsername: body.basicUsername ?? null,
    basicPassword: body.basicPassword ?? null,
    webhookVersion: body.webhookVersion ?? '2022-08',
    maxInFlight: body.maxInFlight,
    retrySchedule: body.retrySchedule,
    retryJitter: body.retryJitter,
    maxPerSecond: body.maxPerSecond,
  });
  brokerRules(w);
  const auth = receiverAuthRules(w.authMethod, w.url, body);
  return async (tx: Queryable) => {
    const row = await store.writeReceiverAuth(tx, (await store.insertSubscription(tx, w, newSigningSecret())).id, auth);
    if (dest.password !== null) await store.setDestinationPassword(tx, row.id, dest.password);
    const answer = { ...shapeSubscription(row, retryDefault), signingSecret: row.signing_secret };
    await audit(tx, answer);
    return answer;
  };
}

export async function mustFind(db: Queryable, uuid: string, lock: boolean | 'share' = false): Promise<store.SubscriptionRow> {
  const row = await store.findSubscription(db, uuid, lock);
  if (!row) throw notFound(`webhook subscription "${uuid}" not found`, 'uuid');
  return row;
}

/**
 * A PATCH whose broker URL writes the password as *** (as shown) but is not the stored URL: the stored password
 * would go to another host, vhost, exchange or subject than the one it was given for (docs/destinations.md).
 */
function keptPasswordElsewhere(): ApiError {
  return invalid('"url" gives the password as *** (as shown), which keeps the stored password only when the URL is the stored one unchanged: for another URL, give its password again', 'url');
}

export async function patchSubscription(db: Db, uuid: string, patch: SubscriptionPatchT, allowPrivate: boolean, audit: AuditHook, retryDefault: number[]) {
  checkPolicy(patch);
  if (patch.url !== undefined) await validateUrl(patch.url, allowPrivate);
  const dest = patch.url === undefined ? undefined : splitCredential(patch.url);
  if (patch.oauth2) await checkTokenUrl(patch.oauth2.tokenUrl, allowPrivate);
  let reactivated = false;
  const answer = await db.transaction(async (tx) => {
    const cur = await mustFind(tx, uuid, true);
    // Compared as the URL parser writes them: a URL stored as typed (migration 073 kept the rest of it so: `[0:0::1]`,
    // a space in the vhost) is the same URL when sent back as shown.
    if (dest?.password === REDACTED_PASSWORD && new URL(dest.url).href !== new URL(cur.url).href) throw keptPasswordElsewhere();
    // A credential kept as it is must be readable (it is written back): one that cannot be opened is given anew,
    // unless the method no longer uses it.
    const method = chosenMethod(patch, cur.auth_method);
    // A stored Bearer token or Basic password is kept only for the origin it was given for: a URL of another origin gets
    // it again (an admin, who cannot read it, could otherwise send it to a host of their choosing). So is a stored OAuth2
    // client secret: the access tokens it obtains are sent to the receiver (until 2026-11-28 they followed the URL).
    if (dest && destinationKind(dest.url) === 'http' && !sameOrigin(dest.url, cur.url)) {
      for (const [field, uses, stored] of [['bearerToken', 'BEARER', cur.bearer_token], ['basicPassword', 'BASIC', cur.basic_password]] as const) {
        if (method === uses && cur.auth_method === uses && stored !== null && patch[field] === undefined) {
          throw invalid(`"${field}" must be given again when "url" names another origin: the stored one stays with the origin it was given for`, field);
        }
      }
      if (method === OAUTH2 && cur.auth_method === OAUTH2 && cur.oauth2_client_secret !== null && patch.oauth2?.clientSecret === undefined) {
        throw invalid('"oauth2" with its "clientSecret" must be given again when "url" names another origin: the stored secret, and the access tokens it obtains, stay with the receiver they were given for (a field of version 2026-11; or authMethod NONE)', 'oauth2.clientSecret');
      }
    }
    for (const [field, uses] of [['bearerToken', 'BEARER'], ['basicPassword', 'BASIC']] as const) {
      const why = cur.unreadable[field];
      if (why && method === uses && patch[field] === undefined) throw unreadable(field, why, `give "${field}" again in this PATCH`);
    }
    const secretWhy = cur.unreadable['oauth2.clientSecret'];
    if (secretWhy && method === OAUTH2 && patch.oauth2?.clientSecret === undefined) {
      throw unreadable('oauth2.clientSecret', secretWhy, 'give "oauth2" with its "clientSecret" again in this PATCH');
    }
    // Re-activated with a signing secret nobody can sign with: every delivery would fail SECRET_UNREADABLE.
    const signingWhy = cur.unreadable.signingSecret;
    if (signingWhy && patch.isActive === true && !cur.is_active) throw unreadable('signingSecret', signingWhy, 'rotate it (POST …/rotateSecret) before activating the subscription');
    // So is one kept with a URL password nobody can open (every publish would fail SECRET_UNREADABLE; a review, 2026-11-30).
    if (patch.isActive === true && !cur.is_active && (dest === undefined || dest.password === REDACTED_PASSWORD)) {
      const urlWhy = await store.destinationPasswordUnreadable(tx, cur.id);
      if (urlWhy) throw unreadable("url's password", urlWhy, 'give "url" with its password again in this PATCH');
    }
    const keyWhy = cur.unreadable['tls.clientKey'];
    if (keyWhy && patch.tls !== null && patch.tls?.clientKey === undefined) throw unreadable('tls.clientKey', keyWhy, 'give "tls" with its "clientKey" again in this PATCH, or "tls": null');
    const w = credentialRules({
      url: dest?.url ?? cur.url,
      eventTypes: patch.eventTypes ?? cur.event_types,
      isActive: patch.isActive ?? cur.is_active,
      authMethod: method,
      bearerToken: patch.bearerToken !== undefined ? patch.bearerToken : cur.bearer_token,
      basicUsername: patch.basicUsername !== undefined ? patch.basicUsername : cur.basic_username,
      basicPassword: patch.basicPassword !== undefined ? patch.basicPassword : cur.basic_password,
      webhookVersion: patch.webhookVersion ?? cur.webhook_version,
      maxInFlight: patch.maxInFlight,
      retrySchedule: patch.retrySchedule,
      retryJitter: patch.retryJitter,
      maxPerSecond: patch.maxPerSecond,
    });
    brokerRules(w);
    const auth = receiverAuthRules(w.authMethod, w.url, patch, cur);
    const row = await store.writeReceiverAuth(tx, (await store.updateSubscription(tx, cur.id, w)).id, auth);
    // A new URL brings its own password; one written back as shown (***) keeps the stored password.
    let passwordChanged = false;
    if (dest && dest.password !== REDACTED_PASSWORD) {
      const was = await store.destinationPassword(tx, cur.id);
      passwordChanged = 'why' in was || was.value !== dest.password;
      await store.setDestinationPassword(tx, cur.id, dest.password);
    }
    // A PATCH that changed nothing (`isActive:false` of an inactive subscription, the same body sent twice) is no act:
    // no audit row (it was recorded again each time, a "disabled" of one disabled already), no notice to the workers,
    // and its updatedAt stays (its credentials, written again sealed anew, are the same values).
    if (!passwordChanged && stateOf(row) === stateOf(cur)) {
      await store.keepUpdatedAt(tx, cur.id, cur.updated_at);
      const answer = shapeSubscription({ ...row, updated_at: cur.updated_at }, retryDefault);
      await audit(tx, answer, false);
      return answer;
    }
    // Re-activated: its waiting deliveries are due now (their scheduled retries brought forward), and the workers told.
    if (row.is_active && !cur.is_active) {
      reactivated = true;
      await store.liftPause(tx, cur.uuid);
      await store.makeWaitingDue(tx, cur.id);
      await store.notifyWorkers(tx);
    }
    await store.notifySubscriptionsChanged(tx, [cur.id]);
    const answer = shapeSubscription(row, retryDefault);
    // Disabled: it was active and is not now. Any other change (re-activated, or changed while inactive with an
    // `isActive:false` sent along) is a change (docs/security.md, the catalogue).
    await audit(tx, answer, cur.is_active && !row.is_active ? 'subscription.disabled' : 'subscription.changed');
    return answer;
  });
  // Re-activated: answered once the writes that began before are over (at most ACTIVATION_WAIT_MS). A statement that
  // began before (an import's chunk, seconds long) fans its events out as of its start, without this subscription, and
  // commits them after: a replay asked right after the answer ended before them, and they were never sent (found by a
  // probe: 5,000 of 20,000 events of an import). Now "re-activate, then replay" covers them (docs/replay.md).
  if (reactivated) await store.writesBeforeNowEnded(db, ACTIVATION_WAIT_MS);
  return answer;
}

/**
 * A subscription as stored, its credentials in clear (and which cannot be opened), but for when it was last written
 * and its rotated-out secrets' expiry (read against the clock): the same before and after a PATCH that changed nothing.
 */
const stateOf = ({ updated_at: _u, retired_secret_expires_at: _r, ...rest }: store.SubscriptionRow) => JSON.stringify(rest);

/**
 * How long a re-activation waits for the writes that began before it: an import's chunk or a merge takes seconds; a
 * session left idle in a transaction does not hold the answer longer (nor past a proxy's usual 30 s).
 */
const ACTIVATION_WAIT_MS = 10_000;

export async function removeSubscription(db: Db, uuid: string, audit: AuditHook): Promise<void> {
  await db.transaction(async (tx) => {
    const cur = await mustFind(tx, uuid, true);
    await store.deleteSubscription(tx, cur.id);
    await store.notifySubscriptionsChanged(tx, [cur.id]);
    await audit(tx, { url: shapeSubscription(cur, []).url }); // which subscription it was (its URL as shown: no password)
  });
}

/** The signing secret, shown only once the reveal is in the audit log. */
export async function revealSecret(db: Db, uuid: string, audit: AuditHook) {
  return db.transaction(async (tx) => {
    const answer = shapeSecret(await mustFind(tx, uuid));
    await audit(tx, answer);
    return answer;
  });
}

export async function rotate(db: Db, uuid: string, audit: AuditHook) {
  return db.transaction(async (tx) => {
    const cur = await mustFind(tx, uuid, true);
    await dropUnopenableRetired(tx, cur.id, activeBox().keyIds);
    const rotated = await store.rotateSecret(tx, cur.id, newSigningSecret(), ROTATION_GRACE_SEC, !cur.unreadable.signingSecret).catch((err) => {
      if (!(err instanceof store.TooManySecrets)) throw err;
      throw new ApiError('Conflict', `${err.live + 1} secrets sign this subscription's deliveries already (the current one and ${err.live} ` +
        `rotated out within 24 h): the oldest stops signing at ${err.firstExpiresAt}; rotate again after that`, 'signingSecret');
    });
    const answer = shapeSecret(rotated);
    await store.notifySubscriptionsChanged(tx, [cur.id]); // what is held is signed with the new secret too
    await audit(tx, answer);
    return answer;
  });
}

export async function sendTest(db: Db, uuid: string, source: string) {
  return db.transaction(async (tx) => {
    await store.liftPause(tx, uuid); // "now": not after a receiver's Retry-After pause
    const sub = await mustFind(tx, uuid, 'share'); // a delete meanwhile would leave the test pending for ever
    if (!sub.is_active) throw new ApiError('Conflict', 'the subscription is inactive: activate it to send a test', 'isActive');
    return store.insertTestEvent(tx, sub, source);
  });
}

export function shapeDelivery(d: store.DeliveryRow) {
  return {
    uuid: d.uuid,
    eventUuid: d.event_uuid,
    subscriptionUuid: d.subscription_uuid,
    eventType: d.event_type,
    status: d.status as 'pending' | 'delivered' | 'failed' | 'cancelled',
    attemptCount: d.attempt_count,
    nextAttemptAt: iso(d.next_attempt_at),
    createdAt: isoNN(d.created_at),
    deliveredAt: iso(d.delivered_at),
  };
}

/**
 * Attempts a delivery now (SPEC §11 retry semantics). A pending one keeps its remaining schedule if the manual
 * attempt fails (store.retryDelivery remembers it); a failed or delivered one gets this single attempt. A
 * cancelled one, or one whose subscription is deleted or inactive, cannot be attempted now (409).
 */
export async function retryNow(db: Db, uuid: string) {
  return db.transaction(async (tx) => {
    await requeueGuard(tx); // its event stays stored until this commits (src/partitions/store.ts)
    const d = await store.findDelivery(tx, uuid);
    if (!d) throw notFound(`delivery "${uuid}" not found`, 'uuid');
    if (d.status === 'cancelled') throw new ApiError('Conflict', 'the delivery was cancelled (its subscription is deleted)', 'status');
    await store.liftPause(tx, d.subscription_uuid); // "now": not after a receiver's Retry-After pause
    // Locked (shared: writes fanning out to it go on), so that a delete cannot cancel the pending ones between this
    // check and the update (which would leave this one pending for ever); an inactive subscription's deliveries wait,
    // so it could not be attempted now.
    const sub = await store.findSubscription(tx, d.subscription_uuid, 'share');
    if (!sub) throw new ApiError('Conflict', 'the subscription of this delivery is deleted', 'subscriptionUuid');
    if (!sub.is_active) throw new ApiError('Conflict', 'the subscription is inactive: activate it to retry its deliveries', 'isActive');
    if (!(await store.retryDelivery(tx, d, NO_MORE_RETRIES))) {
      throw new ApiError('Conflict', 'the attempt an earlier retry of this delivery asked for is under way: ask again once it is logged', 'status');
    }
    return shapeDelivery((await store.findDelivery(tx, uuid))!);
  });
}

export async function recover(db: Db, uuid: string, since: string) {
  return db.transaction(async (tx) => {
    await store.liftPause(tx, uuid); // re-queued for now: not after a receiver's Retry-After pause
    const sub = await mustFind(tx, uuid, 'share'); // a delete meanwhile would leave them pending for ever
    await requeueGuard(tx); // their events stay stored until this commits (src/partitions/store.ts)
    return { requeued: await store.recoverDeliveries(tx, sub.id, since, NO_MORE_RETRIES) };
  });
}

export function shapeAttempt(a: AttemptRow) {
  return {
    uuid: a.uuid,
    deliveryUuid: a.delivery_uuid,
    eventUuid: a.event_uuid,
    subscriptionUuid: a.subscription_uuid,
    eventType: a.event_type,
    url: shownUrl(a.url),
    attemptNumber: a.attempt_number,
    startedAt: isoNN(a.started_at),
    durationMs: a.duration_ms,
    statusCode: a.status_code,
    errorCode: a.error_code,
    outcome: a.outcome,
    nextAttemptAt: iso(a.next_attempt_at),
    requestHeaders: a.request_headers,
    requestBody: a.request_body,
    responseBody: a.response_body,
  };
}

/**
 * Hourly attempts and successes over the last `hours` hours (the current hour included), per subscription with
 * attempts and overall; every bucket present (zeros included), oldest first. The hours the rollup holds are read
 * from it (stats-rollup.ts), the rest counted from the attempts: the same answer whatever the job's progress. When
 * the rollup does not reach back to the window's start (no pass yet), every hour is counted.
 */
export async function stats(db: Queryable, hours: number) {
  const hourMs = 3_600_000;
  const first = Math.floor(Date.now() / hourMs) * hourMs - (hours - 1) * hourMs;
  const slots = Array.from({ length: hours }, (_, i) => new Date(first + i * hourMs).toISOString());
  const empty = () => slots.map((hour) => ({ hour, attempts: 0, successes: 0 }));
  const overall = empty();
  const bySub = new Map<string, ReturnType<typeof empty>>();
  const w = await rolledHours(db);
  const useRollup = w.from !== null && w.until !== null && w.from.getTime() <= first && w.until.getTime() > first;
  // The rollup's rows of days whose attempts retention has dropped are left out, as those attempts are (a
  // BULB_WEBHOOK_RETENTION_DAYS under 7).
  const kept = useRollup ? await keptSince(db, ATTEMPTS) : null;
  const rolled = useRollup ? { from: new Date(Math.max(first, kept?.getTime() ?? first)).toISOString(), until: w.until!.toISOString() } : undefined;
  for (const r of await attemptStats(db, rolled?.until ?? slots[0], rolled)) {
    const i = Math.round((Date.parse(isoNN(r.hour)) - first) / hourMs);
    if (i < 0 || i >= hours) continue;
    let b = bySub.get(r.subscription_uuid);
    if (!b) bySub.set(r.subscription_uuid, (b = empty()));
    b[i].attempts += r.attempts;
    b[i].successes += r.successes;
    overall[i].attempts += r.attempts;
    overall[i].successes += r.successes;
  }
  return {
    hours,
    since: slots[0],
    overall,
    subscriptions: [...bySub].map(([subscriptionUuid, buckets]) => ({ subscriptionUuid, buckets })),
  };
}
