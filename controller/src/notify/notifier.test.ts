import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Notification, NotificationSpec } from '@kpromo/api';
import { afterEach, describe, expect, it } from 'vitest';
import { metricsRegistry } from '../observability/metrics.js';
import { Notifier, type ReleaseEvent, selectNotifications } from './notifier.js';
import { verifyWebhookSignature } from './signWebhook.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A real HTTP receiver answering with the scripted statuses in order (the last one repeats). */
async function receiver(statuses: Array<number | { status: number; headers?: Record<string, string> }>) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString(), at: Date.now() });
      const s = statuses[Math.min(received.length - 1, statuses.length - 1)];
      const r = typeof s === 'number' ? { status: s } : s;
      res.writeHead(r.status, r.headers).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  servers.push(server);
  return { url, received };
}
const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

function notification(
  name: string,
  webhook: NotificationSpec['webhook'],
  extra: Partial<NotificationSpec> = {},
): Notification {
  return {
    apiVersion: 'kpromo.dev/v1alpha1' as Notification['apiVersion'],
    kind: 'Notification',
    metadata: { name, namespace: 'team-a' },
    spec: { events: ['AppPromoted', 'PlanComplete'], webhook, ...extra },
  };
}

const event: ReleaseEvent = {
  type: 'AppPromoted',
  namespace: 'team-a',
  plan: 'shop-20260101',
  flow: 'shop',
  from: 'staging',
  to: 'production',
  application: 'cart',
  tag: 'v1.2.0-20260101T000000Z',
  digest: `sha256:${'c'.repeat(64)}`,
  time: '2026-01-01T00:00:00Z',
};

function notifier(list: Notification[], secrets: Record<string, string> = {}) {
  const deliveries: Array<{ name: string; ok: boolean; error?: string }> = [];
  const n = new Notifier({
    listNotifications: () => list,
    readSecret: async (ns, name, key) => secrets[`${ns}/${name}/${key}`],
    onDelivery: (x, ok, error) => deliveries.push({ name: x.metadata.name, ok, error }),
    retryBaseMs: 20,
    retryMaxMs: 200,
  });
  return { n, deliveries };
}

describe('Notifier with a real HTTP receiver', () => {
  it('delivers a signed JSON event with the configured headers', async () => {
    const r = await receiver([204]);
    const { n, deliveries } = notifier(
      [notification('hook', { url: r.url, secretRef: { name: 'wh', key: 'hmac' }, headers: { 'x-team': 'platform' } })],
      { 'team-a/wh/hmac': 's3cret' },
    );
    n.emit(event);
    await n.flush();
    expect(deliveries).toEqual([{ name: 'hook', ok: true, error: undefined }]);
    expect(r.received).toHaveLength(1);
    const [{ headers, body }] = r.received;
    const payload = JSON.parse(body);
    expect(payload).toEqual({ id: headers['x-kpromo-delivery'], type: 'AppPromoted', time: event.time, data: event });
    expect(headers['content-type']).toBe('application/json');
    expect(headers['x-kpromo-event']).toBe('AppPromoted');
    expect(headers['x-team']).toBe('platform');
    expect(headers['x-kpromo-delivery']).toMatch(/^[0-9a-f-]{36}$/);
    const ts = headers['x-kpromo-timestamp'] as string;
    expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(60);
    expect(verifyWebhookSignature('s3cret', ts, body, headers['x-kpromo-signature'] as string)).toBe(true);
    expect(verifyWebhookSignature('wrong', ts, body, headers['x-kpromo-signature'] as string)).toBe(false);
    expect(await metricsRegistry.getSingleMetricAsString('kpromo_notifications_total')).toMatch(
      /result="delivered"} [1-9]/,
    );
  });

  it('retries after two 500s with the same delivery id, then succeeds', async () => {
    const r = await receiver([500, 500, 200]);
    const { n, deliveries } = notifier([notification('hook', { url: r.url, maxAttempts: 5 })]);
    n.emit(event);
    await n.flush();
    expect(deliveries).toEqual([{ name: 'hook', ok: true, error: undefined }]);
    expect(r.received).toHaveLength(3);
    expect(new Set(r.received.map((x) => x.headers['x-kpromo-delivery'])).size).toBe(1);
    expect(r.received[0].headers['x-kpromo-signature']).toBeUndefined();
  });

  it('honours Retry-After on 429', async () => {
    const r = await receiver([{ status: 429, headers: { 'retry-after': '1' } }, 200]);
    const { n, deliveries } = notifier([notification('hook', { url: r.url })]);
    n.emit(event);
    await n.flush();
    expect(deliveries[0].ok).toBe(true);
    // retryMaxMs caps the wait at 200ms in this test, so Retry-After=1s shows as the capped wait.
    expect(r.received[1].at - r.received[0].at).toBeGreaterThanOrEqual(190);
  });

  it('gives up after maxAttempts', async () => {
    const r = await receiver([503]);
    const { n, deliveries } = notifier([notification('hook', { url: r.url, maxAttempts: 3 })]);
    n.emit(event);
    await n.flush();
    expect(r.received).toHaveLength(3);
    expect(deliveries).toEqual([
      { name: 'hook', ok: false, error: `${r.url} answered HTTP 503 (gave up after 3 attempts)` },
    ]);
  });

  it('does not retry a 400', async () => {
    const r = await receiver([400, 200]);
    const { n, deliveries } = notifier([notification('hook', { url: r.url, maxAttempts: 5 })]);
    n.emit(event);
    await n.flush();
    expect(r.received).toHaveLength(1);
    expect(deliveries).toEqual([{ name: 'hook', ok: false, error: `${r.url} answered HTTP 400` }]);
  });

  it('times out slow receivers and retries them', async () => {
    const slow = createServer(() => {}); // never answers
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    servers.push(slow);
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`;
    const { n, deliveries } = notifier([notification('hook', { url, timeoutSeconds: 1, maxAttempts: 2 })]);
    const started = Date.now();
    n.emit(event);
    await n.flush();
    slow.closeAllConnections();
    expect(deliveries[0]).toMatchObject({ ok: false, error: expect.stringContaining('timed out after 1000ms') });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
  });

  it('retries refused connections and reports the cause', async () => {
    const r = await receiver([200]);
    const url = r.url;
    await Promise.all(servers.splice(0).map((s) => new Promise((res) => s.close(res))));
    const { n, deliveries } = notifier([notification('hook', { url, maxAttempts: 2 })]);
    n.emit(event);
    await n.flush();
    expect(deliveries).toEqual([
      { name: 'hook', ok: false, error: `${url} unreachable: ECONNREFUSED (gave up after 2 attempts)` },
    ]);
  });

  it('fails clearly when the signing Secret is missing, without sending unsigned', async () => {
    const r = await receiver([200]);
    const { n, deliveries } = notifier([notification('hook', { url: r.url, secretRef: { name: 'gone' } })]);
    n.emit(event);
    await n.flush();
    expect(r.received).toHaveLength(0);
    expect(deliveries[0].error).toBe(
      'Secret gone key secret (spec.webhook.secretRef of Notification team-a/hook) not found',
    );
  });
});

describe('selectNotifications', () => {
  const hook = { url: 'http://x' };
  const all = [
    notification('any-flow', hook),
    notification('shop-only', hook, { flows: ['shop'] }),
    notification('other-flow', hook, { flows: ['blog'] }),
    notification('complete-only', hook, { events: ['PlanComplete'] }),
    { ...notification('other-ns', hook), metadata: { name: 'other-ns', namespace: 'team-b' } },
  ];
  it('matches namespace, event type and flow', () => {
    expect(selectNotifications(all, event).map((n) => n.metadata.name)).toEqual(['any-flow', 'shop-only']);
    expect(
      selectNotifications(all, { ...event, type: 'PlanComplete', flow: 'blog' }).map((n) => n.metadata.name),
    ).toEqual(['any-flow', 'other-flow', 'complete-only']);
  });
});
