import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiContext } from '../api/context.js';
import { AuthError } from '../auth/authenticator.js';
import type { HttpAuthDeps } from '../auth/httpAuth.js';
import type { Caller } from '../auth/identity.js';
import { createApp, listen } from './httpServer.js';

// The anonymous probes and the error answers, over a real HTTP listener (no cluster needed: the
// authenticator answers from static tokens; nothing here talks to an apiserver).

const INTERNAL = 'dial tcp 10.96.0.1:443: connect: connection refused';
const servers: Array<{ close(): void }> = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

const admin: Caller = { username: 'admin', groups: ['system:authenticated'], source: 'static' };

async function serve(o: {
  ready?: { ready: boolean; detail: Record<string, unknown> };
  healthy?: { ok: boolean; problems?: string[] };
  authenticate?: (token: string) => Promise<Caller>;
}) {
  const auth: HttpAuthDeps = {
    authenticator: {
      authenticate:
        o.authenticate ??
        (async (t) => (t === 'good-token' ? admin : Promise.reject(new AuthError('invalid bearer token')))),
    },
    authorizer: { check: async () => ({ allowed: true, reason: '' }) },
  };
  const app = createApp({
    api: {} as ApiContext,
    auth,
    healthy: () => o.healthy ?? { ok: true },
    ready: () => o.ready ?? { ready: true, detail: { synced: true, leader: true } },
  });
  const srv = await listen(app, '127.0.0.1', 0);
  servers.push(srv);
  const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return async (path: string, token?: string) => {
    const r = await fetch(`${base}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    return { status: r.status, headers: r.headers, text: await r.text() };
  };
}

describe('anonymous probes and error answers say a short reason, never internal detail', () => {
  // Attack (issue 31): /readyz is anonymous; its body listed informer errors (apiserver addresses,
  // the namespaces of the shard), free reconnaissance for anyone who can reach the port.
  it('/readyz 503 names a short reason only', async () => {
    const get = await serve({
      ready: {
        ready: false,
        detail: { synced: false, leader: false, errors: [INTERNAL], shard: 'blue', namespaces: ['payments-prod'] },
      },
    });
    const r = await get('/readyz');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.text)).toEqual({ ready: false, reason: 'caches not synced' });
    expect(r.text).not.toContain('10.96.0.1');
    expect(r.text).not.toContain('payments-prod');
  });

  it('/readyz 200 says only whether synced and leading', async () => {
    const get = await serve({
      ready: { ready: true, detail: { synced: true, leader: true, errors: [INTERNAL], namespaces: ['payments-prod'] } },
    });
    const r = await get('/readyz');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ ready: true, detail: { synced: true, leader: true } });
  });

  it('/healthz 503 names no problem detail', async () => {
    const get = await serve({ healthy: { ok: false, problems: [`informers failing for 400 s: ${INTERNAL}`] } });
    const r = await get('/healthz');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.text)).toEqual({ ok: false, reason: 'unhealthy' });
  });

  it('a token check that fails answers 503 with Retry-After and without the error', async () => {
    const get = await serve({
      authenticate: async () => {
        throw new Error(`POST /apis/authentication.k8s.io/v1/tokenreviews on cluster "dev" failed: ${INTERNAL}`);
      },
    });
    const r = await get('/api/v1/flows', 'some-token');
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(JSON.parse(r.text)).toEqual({ error: 'token validation unavailable, retry later' });
  });
});
