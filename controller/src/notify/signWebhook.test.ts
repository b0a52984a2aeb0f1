import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signWebhook, verifyWebhookSignature } from './signWebhook.js';

describe('signWebhook', () => {
  const body = JSON.stringify({ id: 'd1', type: 'AppPromoted' });

  it('is the hex HMAC-SHA256 of "<timestamp>.<body>" with a sha256= prefix', () => {
    // Known-answer vector computed independently of the implementation.
    expect(signWebhook('key', '1700000000', 'hello')).toBe(
      `sha256=${createHmac('sha256', 'key').update('1700000000.hello').digest('hex')}`,
    );
    expect(signWebhook('key', 'ts', '')).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it('verifies only the exact secret, timestamp and body', () => {
    const sig = signWebhook('s3cret', '1700000000', body);
    expect(verifyWebhookSignature('s3cret', '1700000000', body, sig)).toBe(true);
    expect(verifyWebhookSignature('other', '1700000000', body, sig)).toBe(false);
    expect(verifyWebhookSignature('s3cret', '1700000001', body, sig)).toBe(false);
    expect(verifyWebhookSignature('s3cret', '1700000000', `${body} `, sig)).toBe(false);
    expect(verifyWebhookSignature('s3cret', '1700000000', body, undefined)).toBe(false);
    expect(verifyWebhookSignature('s3cret', '1700000000', body, 'sha256=00')).toBe(false);
  });
});
