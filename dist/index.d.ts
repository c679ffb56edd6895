export { verifyWebhook, WebhookVerificationError, type WebhookEvent, type VerifyOptions } from './webhooks/verify.ts';
