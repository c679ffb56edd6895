// Public entry points of the package: the webhook receiver helper (also at 'bulb/verify').
export { verifyWebhook, WebhookVerificationError, type WebhookEvent, type VerifyOptions } from './webhooks/verify.ts';
