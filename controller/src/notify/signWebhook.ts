import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * `sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`. The timestamp is inside the MAC so a receiver
 * can reject replays of an old delivery by checking x-kpromo-timestamp against its clock.
 */
export function signWebhook(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** Receiver-side check (used by tests and as a reference for webhook consumers); constant-time. */
export function verifyWebhookSignature(
  secret: string,
  timestamp: string,
  body: string,
  header: string | undefined,
): boolean {
  if (!header) return false;
  const expected = Buffer.from(signWebhook(secret, timestamp, body));
  const actual = Buffer.from(header);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
