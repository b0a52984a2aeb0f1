import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Notification, NotificationSpec } from '@kpromo/api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ReleaseEvent } from '../extension/notificationProvider.js';
import { Egress, registerOwnListener } from '../net/guardedFetch.js';
import { createLogger } from '../observability/logger.js';
import { metricsRegistry } from '../observability/metrics.js';
import { Notifier, plainHeadersProblem, selectNotifications } from './notifier.js';
import { verifyWebhookSignature } from './signWebhook.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A real HTTP receiver answering with the scripted statuses in order (the last one repeats). */
async function receiver(
  statuses: Array<number | { status: number; headers?: Record<string, string> }>,
  host = '127.0.0.1',
) {
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
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host}:${port}/hook`;
  servers.push(server);
  // How errors and logs show it: origin only (webhook paths often are the credential).
  return { url, shown: `http://${host}:${port}/…`, port, server, received };
}
const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/**
 * Request deadlines (AbortSignal.timeout, on a timer of Node's own that fake timers cannot reach)
 * that run out when the test calls `expire`; `ms` is the deadline asked for.
 */
function controlledDeadlines() {
  const deadlines: Array<{ ms: number; expire: () => void }> = [];
  vi.spyOn(AbortSignal, 'timeout').mockImplementation((ms) => {
    const c = new AbortController();
    const expire = () => c.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    deadlines.push({ ms, expire });
    return c.signal;
  });
  return deadlines;
}

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

/** The receivers listen on 127.0.0.1, which the default egress policy refuses: these tests allow it. */
const LOOPBACK_ALLOWED = ['127.0.0.1/32'];

/**
 * A Notifier over `list` with Secrets from `secrets` ("ns/name/key" → value) and `opts.secretData`
 * ("ns/name" → data). Every Secret is an opted-in credential whose destinations are the receivers
 * of the Notifications in `list` (credentialPolicy.test.ts and credentialPolicy.int.test.ts test the rule).
 */
function notifier(
  list: Notification[],
  secrets: Record<string, string> = {},
  opts: { egress?: Egress; secretData?: Record<string, Record<string, string>>; logs?: string[] } = {},
) {
  const deliveries: Array<{ name: string; ok: boolean; error?: string }> = [];
  const destinations = list
    .map((x) => x.spec.webhook?.url)
    .filter((u): u is string => !!u)
    .map((u) => `${new URL(u).origin}/`)
    .join(',');
  const readSecretObject = async (ns: string, name: string) => {
    const keyed = Object.entries(secrets)
      .filter(([k]) => k.startsWith(`${ns}/${name}/`))
      .map(([k, v]) => [k.slice(`${ns}/${name}/`.length), v]);
    const data = opts.secretData?.[`${ns}/${name}`] ?? (keyed.length ? Object.fromEntries(keyed) : undefined);
    if (!data) return undefined;
    return {
      namespace: ns,
      name,
      type: 'Opaque',
      data,
      labels: { 'promotions.kpromo.dev/credential': 'true' },
      annotations: { 'promotions.kpromo.dev/destinations': destinations },
    };
  };
  const n = new Notifier({
    listNotifications: () => list,
    readSecretObject,
    egress: opts.egress ?? new Egress({ allowedCidrs: LOOPBACK_ALLOWED }),
    logger: opts.logs ? createLogger({ level: 'debug', destination: { write: (l) => opts.logs?.push(l) } }) : undefined,
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
      { name: 'hook', ok: false, error: `${r.shown} answered HTTP 503 (gave up after 3 attempts)` },
    ]);
  });

  it('does not retry a 400', async () => {
    const r = await receiver([400, 200]);
    const { n, deliveries } = notifier([notification('hook', { url: r.url, maxAttempts: 5 })]);
    n.emit(event);
    await n.flush();
    expect(r.received).toHaveLength(1);
    expect(deliveries).toEqual([{ name: 'hook', ok: false, error: `${r.shown} answered HTTP 400` }]);
  });

  it('times out slow receivers and retries them', async () => {
    // Each attempt's deadline (AbortSignal.timeout) runs out when the test says, once the receiver
    // holds the request: no wall-clock measurement for a busy machine to stretch or cut short.
    const deadlines = controlledDeadlines();
    const arrived: Array<() => void> = [];
    const arrivals = [0, 1].map(() => new Promise<void>((r) => arrived.push(r)));
    let requests = 0;
    const slow = createServer(() => arrived[requests++]?.()); // never answers
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    servers.push(slow);
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`;
    const { n, deliveries } = notifier([notification('hook', { url, timeoutSeconds: 1, maxAttempts: 2 })]);
    n.emit(event);
    const flushed = n.flush();
    await arrivals[0];
    expect(deadlines.map((d) => d.ms)).toEqual([1000]);
    deadlines[0].expire();
    // Retried after the first attempt timed out, with a fresh deadline of its own.
    await arrivals[1];
    expect(deliveries).toEqual([]);
    expect(deadlines.map((d) => d.ms)).toEqual([1000, 1000]);
    deadlines[1].expire();
    await flushed;
    slow.closeAllConnections();
    expect(requests).toBe(2);
    expect(deliveries[0]).toMatchObject({ ok: false, error: expect.stringContaining('timed out after 1000ms') });
  });

  it('retries refused connections and reports the cause', async () => {
    const r = await receiver([200]);
    const { url, shown } = r;
    await Promise.all(servers.splice(0).map((s) => new Promise((res) => s.close(res))));
    const { n, deliveries } = notifier([notification('hook', { url, maxAttempts: 2 })]);
    n.emit(event);
    await n.flush();
    expect(deliveries).toEqual([
      { name: 'hook', ok: false, error: `${shown} unreachable: ECONNREFUSED (gave up after 2 attempts)` },
    ]);
  });

  it('fails clearly when the signing Secret is missing, without sending unsigned', async () => {
    const r = await receiver([200]);
    const { n, deliveries } = notifier([notification('hook', { url: r.url, secretRef: { name: 'gone' } })]);
    n.emit(event);
    await n.flush();
    expect(r.received).toHaveLength(0);
    expect(deliveries[0].error).toBe('Secret gone (spec.webhook.secretRef of Notification team-a/hook) not found');
  });
});

describe('Notifier egress guard (SSRF)', () => {
  it('refuses a loopback receiver under the default policy, without connecting', async () => {
    const r = await receiver([200]);
    const { n, deliveries } = notifier(
      [notification('hook', { url: r.url, maxAttempts: 3 })],
      {},
      { egress: new Egress() },
    );
    n.emit(event);
    await n.flush();
    expect(r.received).toHaveLength(0);
    expect(deliveries).toEqual([
      {
        name: 'hook',
        ok: false,
        error: `${r.shown} blocked by egress policy: address 127.0.0.1 is loopback; allow it with egress.allowedCidrs`,
      },
    ]);
  });

  it("refuses the controller's own API on loopback even with loopback allowed; the API gets zero requests", async () => {
    const api = await receiver([201]); // plays the controller's API listener
    const unregister = registerOwnListener('API', api.server);
    try {
      const url = `http://127.0.0.1:${api.port}/api/v1/plans`;
      const { n, deliveries } = notifier([notification('self', { url, maxAttempts: 3 })]);
      n.emit(event);
      await n.flush();
      expect(deliveries).toEqual([
        {
          name: 'self',
          ok: false,
          error: `http://127.0.0.1:${api.port}/… blocked by egress policy: address 127.0.0.1 port ${api.port} is the controller's own API listener; it cannot be allowed`,
        },
      ]);
    } finally {
      unregister();
    }
    expect(api.received).toHaveLength(0);
  });

  it('refuses a hostname resolving to a blocked address (localhost)', async () => {
    const r = await receiver([200]);
    const url = `http://localhost:${r.port}/hook`;
    const { n, deliveries } = notifier([notification('hook', { url })], {}, { egress: new Egress() });
    n.emit(event);
    await n.flush();
    expect(deliveries[0].ok).toBe(false);
    expect(deliveries[0].error).toMatch(
      new RegExp(
        `^http://localhost:${r.port}/… blocked by egress policy: address (127\\.0\\.0\\.1|::1) of host localhost is loopback`,
      ),
    );
    expect(r.received).toHaveLength(0);
  });

  it('refuses the metadata address literal, once (no retries)', async () => {
    const egress = new Egress({ allowedCidrs: LOOPBACK_ALLOWED });
    const attempts = vi.spyOn(egress, 'fetch');
    const { n, deliveries } = notifier(
      [notification('meta', { url: 'http://169.254.169.254/latest/meta-data/iam?x=1', maxAttempts: 5 })],
      {},
      { egress },
    );
    n.emit(event);
    await n.flush();
    // One attempt, so no backoff either: a policy refusal is not retried. (Counted, not timed: a busy
    // machine can make a single attempt take longer than five quick ones.)
    expect(attempts).toHaveBeenCalledTimes(1);
    expect(deliveries).toEqual([
      {
        name: 'meta',
        ok: false,
        error:
          'http://169.254.169.254/… blocked by egress policy: address 169.254.169.254 is a cloud metadata address; it is never reachable, whatever egress.allowedCidrs lists',
      },
    ]);
  });

  it('does not follow a redirect from an allowed receiver to a blocked address', async () => {
    const internal = await receiver([200], '127.0.0.2'); // not in the allow list
    const r = await receiver([{ status: 307, headers: { location: `http://127.0.0.2:${internal.port}/admin` } }]);
    const { n, deliveries } = notifier([notification('hook', { url: r.url, maxAttempts: 3 })]);
    n.emit(event);
    await n.flush();
    expect(r.received).toHaveLength(1);
    expect(internal.received).toHaveLength(0);
    expect(deliveries).toEqual([
      {
        name: 'hook',
        ok: false,
        error: `${r.shown} answered 307 redirecting to host 127.0.0.2:${internal.port}; redirects are not followed`,
      },
    ]);
  });
});

describe('Notifier headers and secrets in logs', () => {
  it.each([
    'Authorization',
    'cookie',
    'Proxy-Authorization',
    'X-Api-Key',
    'X-Auth-User',
    'x-gitlab-token',
    'Client-Secret',
  ])('refuses the credential-like plain header %s', async (header) => {
    const r = await receiver([200]);
    const { n, deliveries } = notifier([notification('hook', { url: r.url, headers: { [header]: 'Bearer leak-me' } })]);
    n.emit(event);
    await n.flush();
    expect(r.received).toHaveLength(0);
    expect(deliveries[0].error).toBe(
      `Notification team-a/hook: spec.webhook.headers.${header} looks like a credential and is refused in plain spec; put it in a Secret referenced by spec.webhook.headersSecretRef (its keys are header names)`,
    );
    expect(deliveries[0].error).not.toContain('leak-me');
  });

  it('accepts ordinary plain headers and refuses connection-level ones', () => {
    expect(plainHeadersProblem({ 'x-team': 'platform', 'x-request-source': 'kpromo' })).toBeUndefined();
    expect(plainHeadersProblem({ Host: 'internal.svc' })).toBe('spec.webhook.headers may not set header Host');
    expect(plainHeadersProblem({ 'x-kpromo-signature': 'forged' })).toContain('may not set header x-kpromo-signature');
    expect(plainHeadersProblem({ 'x-a': 'one\r\nx-injected: 1' })).toBe(
      'spec.webhook.headers: the value of header x-a contains control characters',
    );
  });

  it('sends the headers of spec.webhook.headersSecretRef', async () => {
    const r = await receiver([204]);
    const { n, deliveries } = notifier(
      [
        notification('hook', {
          url: r.url,
          headers: { 'x-team': 'platform' },
          headersSecretRef: { name: 'hook-headers' },
        }),
      ],
      {},
      { secretData: { 'team-a/hook-headers': { Authorization: 'Bearer t0ken', 'x-api-key': 'k3y' } } },
    );
    n.emit(event);
    await n.flush();
    expect(deliveries).toEqual([{ name: 'hook', ok: true, error: undefined }]);
    expect(r.received[0].headers).toMatchObject({
      authorization: 'Bearer t0ken',
      'x-api-key': 'k3y',
      'x-team': 'platform',
    });
  });

  it('fails clearly when the headers Secret is missing or holds a bad header', async () => {
    const r = await receiver([200]);
    const hook = notification('hook', { url: r.url, headersSecretRef: { name: 'hdr' } });
    const missing = notifier([hook]);
    missing.n.emit(event);
    await missing.n.flush();
    expect(missing.deliveries[0].error).toBe(
      'Secret hdr (spec.webhook.headersSecretRef of Notification team-a/hook) not found',
    );
    const bad = notifier([hook], {}, { secretData: { 'team-a/hdr': { host: 'evil', authorization: 'x' } } });
    bad.n.emit(event);
    await bad.n.flush();
    expect(bad.deliveries[0].error).toBe(
      'Secret hdr (spec.webhook.headersSecretRef of Notification team-a/hook) may not set header host',
    );
    expect(r.received).toHaveLength(0);
  });

  it('never logs the webhook path, query, userinfo or header values', async () => {
    const r = await receiver([503]);
    const logs: string[] = [];
    const { n } = notifier(
      [
        notification('hook', {
          url: `${r.url}/T000/B000/pathsecret?token=querysecret#fragsecret`,
          headersSecretRef: { name: 'hdr' },
          maxAttempts: 2,
        }),
      ],
      {},
      { logs, secretData: { 'team-a/hdr': { authorization: 'Bearer headersecret' } } },
    );
    n.emit(event);
    await n.flush();
    expect(r.received).toHaveLength(2);
    const out = logs.join('');
    expect(out).toContain('webhook delivery failed');
    expect(out).toContain(`${r.shown} answered HTTP 503`);
    for (const secret of ['pathsecret', 'querysecret', 'fragsecret', 'headersecret', 'T000'])
      expect(out).not.toContain(secret);
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
