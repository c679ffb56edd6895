// Public entry points of the package: the webhook receiver helper (also at 'bulb/verify').
export { verifyWebhook, WebhookVerificationError } from "./webhooks/verify.js";
