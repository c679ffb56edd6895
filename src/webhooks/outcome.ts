// What an attempt came to, for every kind of destination: the SPEC's errorCodes (HTTP and broker) and the result the
// worker records (sender.ts for HTTP receivers, destinations/ for brokers).

/**
 * BROKER_UNREACHABLE: no connection (refused, reset, DNS, closed under the publish); BROKER_REFUSED: the broker
 * answered no (credentials, vhost, missing exchange, a nack, a JetStream error); BROKER_TIMEOUT: no confirm or
 * acknowledgement within the deadline; NO_ROUTE: nothing takes the message (amqp: the mandatory publish came back
 * unroutable; nats: no stream is bound to the subject).
 */
export type BrokerErrorCode = 'BROKER_UNREACHABLE' | 'BROKER_REFUSED' | 'BROKER_TIMEOUT' | 'NO_ROUTE';
export const BROKER_ERROR_CODES: readonly BrokerErrorCode[] = ['BROKER_UNREACHABLE', 'BROKER_REFUSED', 'BROKER_TIMEOUT', 'NO_ROUTE'];

const HTTP_ERROR_CODES = ['TIMEOUT', 'CONNECTION', 'DNS', 'TLS', 'HTTP_STATUS', 'BLOCKED_ADDRESS', 'SECRET_UNREADABLE', 'OAUTH_TOKEN_FAILED'] as const;
export type ErrorCode = (typeof HTTP_ERROR_CODES)[number] | BrokerErrorCode;
/** Every errorCode an attempt can record (the metrics' error_code label values). */
export const ERROR_CODES: readonly ErrorCode[] = [...HTTP_ERROR_CODES, ...BROKER_ERROR_CODES];

export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  errorCode: ErrorCode | null;
  /** First 4 KiB of the response body (UTF-8, lossy), or an error description. */
  responseBody: string | null;
  /** A 429/503 with a valid Retry-After: how long the receiver asks us to wait (ms, at most 1 h). */
  retryAfterMs: number | null;
  durationMs: number;
}
