export declare class WebhookVerificationError extends Error {
}
export interface VerifyOptions {
    /** Largest accepted distance between webhook-timestamp and now, in seconds (default 300). */
    toleranceSec?: number;
    /** "Now" in unix seconds (tests). */
    nowSec?: number;
}
export interface WebhookEvent {
    uuid: string;
    subscription: string;
    createdAt: string;
    eventType: string;
    resourceType: string;
    resource: {
        uuid: string;
        externalId: string | null;
    };
    source: string;
}
type HeaderBag = Headers | Record<string, string | string[] | undefined>;
/**
 * Throws WebhookVerificationError unless the request was signed with `secret` (or one of `secret` when
 * given a list, e.g. during a rotation) within the tolerance. `rawBody` must be the bytes as received.
 */
export declare function verifyWebhook(rawBody: string | Buffer | Uint8Array, headers: HeaderBag, secret: string | string[], opts?: VerifyOptions): WebhookEvent;
export {};
