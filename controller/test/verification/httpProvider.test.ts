import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Application, Environment, VerificationCheck } from '@kpromo/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckContext } from '../../src/extension/checkProvider.js';
import { Egress } from '../../src/net/guardedFetch.js';
import { httpProvider } from '../../src/verification/providers/http.js';

// A real HTTP server on loopback answers by path; the checks go through the real egress guard.
let server: Server;
let base = '';
const seen: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req.url ?? '');
    if (req.url?.startsWith('/ok')) return void res.writeHead(200).end('fine');
    if (req.url === '/moved') return void res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
    res.writeHead(503).end('down');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const ctx = (egress: Egress): CheckContext => ({
  env: { metadata: { name: 'prod' }, spec: { namespace: 'shop' } } as Environment,
  app: { metadata: { name: 'web' } } as Application,
  vars: { application: 'web', namespace: 'shop', environment: 'prod', version: 'v1.2.0+build 7', digest: 'sha256:ab' },
  client: () => Promise.reject(new Error('not used')),
  egress,
});
const check = (url: string, expectStatus?: number): VerificationCheck => ({
  name: 'smoke',
  http: { url, ...(expectStatus ? { expectStatus } : {}) },
});
const loopback = new Egress({ allowedCidrs: ['127.0.0.1/32'] });

describe('http verification checks', () => {
  it('pass on the expected status, with placeholders URL-encoded', async () => {
    const m = await httpProvider.measure(check(`${base}/ok/{application}?v={version}`), ctx(loopback));
    expect(m).toMatchObject({ ok: true, value: 200 });
    expect(seen.at(-1)).toBe('/ok/web?v=v1.2.0%2Bbuild%207');
  });

  it('fail on another status, and never follow a redirect', async () => {
    expect(await httpProvider.measure(check(`${base}/broken`), ctx(loopback))).toMatchObject({
      ok: false,
      value: 503,
      message: `GET ${base}/broken answered 503 (expected 200)`,
    });
    const moved = await httpProvider.measure(check(`${base}/moved`), ctx(loopback));
    expect(moved.ok).toBe(false);
    expect(moved.message).toMatch(/redirect.*not followed/);
    // A check may expect the redirect itself.
    expect(await httpProvider.measure(check(`${base}/moved`, 302), ctx(loopback))).toMatchObject({
      ok: true,
      value: 302,
    });
  });

  it('are refused by the egress guard for internal addresses not allowed', async () => {
    const m = await httpProvider.measure(check(`${base}/ok`), ctx(new Egress()));
    expect(m.ok).toBe(false);
    expect(m.message).toMatch(/blocked by egress policy/);
  });
});
