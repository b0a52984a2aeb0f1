import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { app, deployment, dg, env } from '@kpromo/test-harness/objects';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCache } from '../src/kube/memoryCache.js';
import { Egress, registerOwnListener } from '../src/net/guardedFetch.js';
import { builtinWorkloadKinds } from '../src/rollout/registry.js';
import { checkRollout, runHealthChecks } from '../src/rollout/watchRollout.js';

// A real loopback HTTP server: /ok answers 200, /stable-down 503 (the {environment} placeholder picks the path).
const requests: string[] = [];
const server = createServer((req, res) => {
  requests.push(req.url ?? '');
  if (req.url === '/redirect') {
    res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    return;
  }
  if (req.url === '/slow') return; // never answers
  res.statusCode = req.url === '/ok' || req.url === '/dev-down' ? 200 : 503;
  res.end('internal error: db password=hunter2 at /srv/app.js:42');
});
let base = '';
const port = () => (server.address() as AddressInfo).port;
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(
  () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
);

/** The test server listens on loopback, refused by default: these checks run with loopback allowed. */
const loopback = new Egress({ allowedCidrs: ['127.0.0.1/32'] });

const t0 = new Date('2026-12-02T10:00:00Z');
const at = (s: number) => new Date(t0.getTime() + s * 1000);

describe('application health checks', () => {
  it('passes when every http check answers its expected status', async () => {
    const a = app('cart', { healthChecks: [{ name: 'ping', type: 'http', url: `${base}/ok` }] });
    expect(await runHealthChecks(a, 'stable', t0, at(1), loopback)).toBeUndefined();
  });
  it('keeps the app rolling out while a check fails, then fails it after the check timeout', async () => {
    const a = app('cart', {
      healthChecks: [{ name: 'ping', type: 'http', url: `${base}/{environment}-down`, timeoutSeconds: 30 }],
    });
    expect(await runHealthChecks(a, 'dev', t0, at(1), loopback)).toBeUndefined(); // /dev-down answers 200
    expect(await runHealthChecks(a, 'stable', t0, at(5), loopback)).toMatchObject({
      state: 'Progressing',
      reason: 'HealthCheck',
    });
    const v = await runHealthChecks(a, 'stable', t0, at(30), loopback);
    expect(v).toEqual({
      state: 'Failed',
      reason: 'HealthCheckFailed',
      message: `health check ping: GET ${base}/stable-down answered 503 (expected 200)`,
    });
  });
  it('checkRollout runs the checks only once the workload is ready', async () => {
    const c = new MemoryCache();
    const stable = env('stable');
    const desired = { tag: 'v1', digest: dg('a') };
    const a = app('cart', {
      healthChecks: [{ name: 'ping', type: 'http', url: `${base}/stable-down`, timeoutSeconds: 10 }],
    });
    c.workloads.set('stable/Deployment/cart', deployment('cart', `r/shop/cart:v1@${dg('a')}`, false));
    const input = {
      cache: c,
      clientFor: async () => {
        throw new Error('no cluster in unit tests');
      },
      env: stable,
      app: a,
      refs: a.spec.workloads,
      desired,
      startedAt: t0,
      timeoutSeconds: 600,
      egress: loopback,
      kinds: builtinWorkloadKinds,
    };
    expect(await checkRollout({ ...input, now: at(20) })).toMatchObject({ state: 'Progressing', reason: 'RollingOut' });
    c.workloads.set('stable/Deployment/cart', deployment('cart', `r/shop/cart:v1@${dg('a')}`, true));
    expect(await checkRollout({ ...input, now: at(20) })).toMatchObject({
      state: 'Failed',
      reason: 'HealthCheckFailed',
    });
  });

  it('refuses loopback under the default policy, without sending a request', async () => {
    const before = requests.length;
    const a = app('cart', { healthChecks: [{ name: 'ping', type: 'http', url: `${base}/ok`, timeoutSeconds: 1 }] });
    expect(await runHealthChecks(a, 'stable', t0, at(5), new Egress())).toEqual({
      state: 'Failed',
      reason: 'HealthCheckFailed',
      message: `health check ping: GET ${base}/ok blocked by egress policy: address 127.0.0.1 is loopback; allow it with egress.allowedCidrs`,
    });
    // The default Egress (what reconciles use unless the runtime installs its configured one) refuses too.
    expect((await runHealthChecks(a, 'stable', t0, at(0)))?.message).toContain('blocked by egress policy');
    expect(requests.length).toBe(before);
  });

  it("refuses the controller's own listener and the metadata address", async () => {
    const before = requests.length;
    const unregister = registerOwnListener('API', server);
    try {
      const self = app('cart', { healthChecks: [{ name: 'self', type: 'http', url: `${base}/api/v1/plans` }] });
      expect((await runHealthChecks(self, 'stable', t0, at(1), loopback))?.message).toMatch(
        /^health check self: GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/plans blocked by egress policy: address 127\.0\.0\.1 port \d+ is the controller's own API listener; it cannot be allowed$/,
      );
    } finally {
      unregister();
    }
    expect(requests.length).toBe(before);
    const meta = app('cart', {
      healthChecks: [{ name: 'meta', type: 'http', url: 'http://169.254.169.254/latest/meta-data/?token=x' }],
    });
    expect((await runHealthChecks(meta, 'stable', t0, at(1), loopback))?.message).toBe(
      'health check meta: GET http://169.254.169.254/latest/meta-data/ blocked by egress policy: address 169.254.169.254 is a cloud metadata address; it is never reachable, whatever egress.allowedCidrs lists',
    );
  });

  it('never echoes the response body and redacts the URL', async () => {
    const a = app('cart', {
      healthChecks: [{ name: 'ping', type: 'http', url: `http://127.0.0.1:${port()}/down?apikey=s3cr3t#x` }],
    });
    const v = await runHealthChecks(a, 'stable', t0, at(1), loopback);
    expect(v?.message).toBe(`health check ping: GET ${base}/down answered 503 (expected 200)`);
    expect(v?.message).not.toMatch(/hunter2|s3cr3t|app\.js/);
  });

  it('does not follow redirects', async () => {
    const before = requests.length;
    const a = app('cart', { healthChecks: [{ name: 'ping', type: 'http', url: `${base}/redirect` }] });
    const v = await runHealthChecks(a, 'stable', t0, at(1), loopback);
    expect(v?.message).toBe(
      `health check ping: GET ${base}/redirect answered 302 (expected 200); redirect to host 169.254.169.254 not followed`,
    );
    expect(requests.slice(before)).toEqual(['/redirect']);
    // A check may expect the redirect itself: it passes, still without following it.
    const expects302 = app('cart', {
      healthChecks: [{ name: 'ping', type: 'http', url: `${base}/redirect`, expectStatus: 302 }],
    });
    expect(await runHealthChecks(expects302, 'stable', t0, at(1), loopback)).toBeUndefined();
  });

  it('says "timed out" and "connection failed" without internal error text', async () => {
    const slow = app('cart', { healthChecks: [{ name: 'ping', type: 'http', url: `${base}/slow` }] });
    const v = await runHealthChecks(slow, 'stable', t0, at(1), loopback);
    expect(v?.message).toBe(`health check ping: GET ${base}/slow timed out after 5s`);
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const down = app('cart', {
      healthChecks: [{ name: 'ping', type: 'http', url: `http://127.0.0.1:${closedPort}/` }],
    });
    expect((await runHealthChecks(down, 'stable', t0, at(1), loopback))?.message).toBe(
      `health check ping: GET http://127.0.0.1:${closedPort}/ connection failed (ECONNREFUSED)`,
    );
  }, 15_000);
});
