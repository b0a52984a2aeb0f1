import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCache } from '../src/kube/cacheView.js';
import { checkRollout, runHealthChecks } from '../src/rollout/watchRollout.js';
import { app, deployment, dg, env } from './fixtures.js';

// A real loopback HTTP server: /ok answers 200, /stable-down 503 (the {environment} placeholder picks the path).
const server = createServer((req, res) => {
  res.statusCode = req.url === '/ok' || req.url === '/dev-down' ? 200 : 503;
  res.end();
});
let base = '';
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const t0 = new Date('2026-12-02T10:00:00Z');
const at = (s: number) => new Date(t0.getTime() + s * 1000);

describe('application health checks', () => {
  it('passes when every http check answers its expected status', async () => {
    const a = app('cart', { healthChecks: [{ name: 'ping', type: 'http', url: `${base}/ok` }] });
    expect(await runHealthChecks(a, 'stable', t0, at(1))).toBeUndefined();
  });
  it('keeps the app rolling out while a check fails, then fails it after the check timeout', async () => {
    const a = app('cart', {
      healthChecks: [{ name: 'ping', type: 'http', url: `${base}/{environment}-down`, timeoutSeconds: 30 }],
    });
    expect(await runHealthChecks(a, 'dev', t0, at(1))).toBeUndefined(); // /dev-down answers 200
    expect(await runHealthChecks(a, 'stable', t0, at(5))).toMatchObject({
      state: 'Progressing',
      reason: 'HealthCheck',
    });
    const v = await runHealthChecks(a, 'stable', t0, at(30));
    expect(v).toMatchObject({ state: 'Failed', reason: 'HealthCheckFailed' });
    expect(v?.message).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/stable-down expected 200, got status 503/);
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
    };
    expect(await checkRollout({ ...input, now: at(20) })).toMatchObject({ state: 'Progressing', reason: 'RollingOut' });
    c.workloads.set('stable/Deployment/cart', deployment('cart', `r/shop/cart:v1@${dg('a')}`, true));
    expect(await checkRollout({ ...input, now: at(20) })).toMatchObject({
      state: 'Failed',
      reason: 'HealthCheckFailed',
    });
  });
});
