// A claimed delivery as the worker holds it: what sending it needs of its event and subscription (queue-store.ts
// claims it; the request, the sender, the token source, the redaction and the broker publishers read it).
import type { SubscriptionRow } from './store.ts';

/** A claimed delivery, with what sending it needs of its event and subscription. */
export interface Claimed
  extends Pick<SubscriptionRow, 'url' | 'auth_method' | 'bearer_token' | 'basic_username' | 'basic_password' | 'webhook_version' | 'signing_secret'>,
    ReceiverAuth {
  id: string;
  uuid: string;
  attempt_count: number;
  schedule_pos: number;
  event_id: string;
  event_uuid: string;
  event_type: string;
  resource_type: string;
  resource_uuid: string;
  resource_external_id: string | null;
  source: string;
  event_created_at: string;
  /** The delivery's own created_at (its partition's key: the outcome's UPDATE finds it in one partition). */
  created_at: string;
  subscription_id: string;
  subscription_uuid: string;
  max_in_flight: number;
  /** Rotated-out secrets still signing (24 h after each rotation), oldest first. */
  previous_secrets: string[];
  /** The password of a broker destination's URL (its stored URL shows it redacted: destinations/url.ts), or null. */
  destination_password: string | null;
  /**
   * Why a stored secret of the subscription cannot be opened (then its secrets are null and nothing is sent: the
   * attempt fails with SECRET_UNREADABLE), or null. One subscription's unreadable value never fails the claim.
   */
  secret_error: string | null;
  /** A rate-capped subscription's send slot for this delivery, in ms from the claim's clock (null: no cap, send at once). */
  send_in_ms: number | null;
  /** Its slot interval, 1000 / maxPerSecond ms (null: no cap). */
  slot_ms: number | null;
  /**
   * Its next_attempt_at, epoch ms of the database's clock (null: a replayed delivery). A claim takes the deliveries of
   * an uncapped lane falling due within CLAIM_AHEAD_MS (a capped one's by its first slot): one claimed before its time
   * waits for it in the worker.
   */
  due_at_ms: number | null;
  /**
   * The end of the subscription's Retry-After pause, epoch ms of the database's clock (null: never paused). A claim
   * takes a paused lane's deliveries when the pause ends within CLAIM_AHEAD_MS: they wait for its end in the worker.
   */
  paused_until_ms: number | null;
}

/** OAuth2 client credentials and mutual TLS of the subscription (migration 044), secrets in clear. */
export type ReceiverAuth = Pick<SubscriptionRow, (typeof RECEIVER_AUTH_COLUMNS)[number]>;
export const RECEIVER_AUTH_COLUMNS = ['oauth2_token_url', 'oauth2_client_id', 'oauth2_client_secret', 'oauth2_scope', 'oauth2_audience',
  'tls_client_certificate', 'tls_client_key', 'tls_ca_certificate'] as const;
