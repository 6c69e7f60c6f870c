import { createHmac } from 'node:crypto';

/**
 * Signing a webhook delivery as the Standard Webhooks specification says
 * (https://www.standardwebhooks.com, "Signature scheme"): pure functions over `node:crypto`, so
 * that a receiver verifies a delivery with any Standard Webhooks library.
 */

/** The delivery's id: the event's cursor, the same on every retry (a receiver's deduplication key). */
export const WEBHOOK_ID = 'webhook-id';
/** Unix seconds of this attempt: a retry is signed afresh. */
export const WEBHOOK_TIMESTAMP = 'webhook-timestamp';
/** `v1,<base64 HMAC-SHA256>`; the specification allows several, space-separated (key rotation). */
export const WEBHOOK_SIGNATURE = 'webhook-signature';

/** The prefix of a secret given as base64 bytes, as Standard Webhooks spells its secrets. */
export const SECRET_PREFIX = 'whsec_';
/** The shortest key accepted, in bytes (a `whsec_` secret) or characters (any other). */
export const MIN_SECRET_LENGTH = 24;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Why `secret` cannot sign, or undefined when it can: a `whsec_` secret must be base64 of at
 * least 24 bytes, any other string at least 24 characters.
 */
export function secretProblem(secret: string): string | undefined {
  if (secret.startsWith(SECRET_PREFIX)) {
    const encoded = secret.slice(SECRET_PREFIX.length);
    if (!BASE64.test(encoded)) return `a ${SECRET_PREFIX} secret must be followed by base64 (A-Z a-z 0-9 + /, padded with =)`;
    const bytes = Buffer.from(encoded, 'base64').length;
    if (bytes < MIN_SECRET_LENGTH) return `a ${SECRET_PREFIX} secret must hold at least ${MIN_SECRET_LENGTH} bytes, not ${bytes}`;
    return undefined;
  }
  if ([...secret].length < MIN_SECRET_LENGTH) return `a secret must be at least ${MIN_SECRET_LENGTH} characters (or ${SECRET_PREFIX} and base64 of at least ${MIN_SECRET_LENGTH} bytes)`;
  return undefined;
}

/** The key a secret stands for: the bytes after `whsec_` base64-decoded, or the string's UTF-8 bytes. */
export function secretKey(secret: string): Buffer {
  return secret.startsWith(SECRET_PREFIX) ? Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64') : Buffer.from(secret, 'utf8');
}

/** `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`: the `webhook-signature` value. */
export function signWebhook(key: Uint8Array, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The three Standard Webhooks headers of one attempt. */
export function webhookHeaders(key: Uint8Array, id: string, timestamp: number, body: string): Record<string, string> {
  return { [WEBHOOK_ID]: id, [WEBHOOK_TIMESTAMP]: String(timestamp), [WEBHOOK_SIGNATURE]: signWebhook(key, id, timestamp, body) };
}
