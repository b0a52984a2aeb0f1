import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { endpointCredentials } from '../credentials/registryCredentials.js';
import { Egress } from '../net/guardedFetch.js';
import { OciError } from './errors.js';
import { RegistryClient, type RegistryEndpoint } from './registryClient.js';

interface Seen {
  method: string;
  url: string;
  authorization?: string;
  body: string;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A loopback HTTP server recording every request; `handle` answers. */
async function serve(
  handle: (req: IncomingMessage, body: string) => { status: number; headers?: Record<string, string>; body?: string },
): Promise<{ host: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, body });
      const r = handle(req, body);
      res.writeHead(r.status, r.headers).end(r.body ?? '');
    });
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { host: `127.0.0.1:${(srv.address() as AddressInfo).port}`, seen };
}

const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
const NO_RETRY = { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 };
// These registries and token services are loopback servers: the egress guard must allow loopback.
const egress = new Egress({ allowedCidrs: ['127.0.0.1/32'] });
afterAll(() => egress.close());

/** A token service granting "tok-<user>" to the right basic credentials or refresh token (`users`). */
function tokenService(users: Record<string, string>) {
  return serve((req, body) => {
    const a = req.headers.authorization;
    if (req.method === 'POST') {
      const f = new URLSearchParams(body);
      return f.get('refresh_token') === users['<refresh>']
        ? { status: 200, body: JSON.stringify({ access_token: 'tok-refresh' }) }
        : { status: 401 };
    }
    for (const [u, p] of Object.entries(users))
      if (a === basic(u, p)) return { status: 200, body: JSON.stringify({ token: `tok-${u}` }) };
    return a ? { status: 401 } : { status: 200, body: JSON.stringify({ token: 'tok-anonymous' }) };
  });
}

/** A registry whose manifests need a Bearer token from `realm` that is not the anonymous one. */
function bearerRegistry(realm: () => string) {
  return serve((req) => {
    const a = req.headers.authorization;
    if (a?.startsWith('Bearer ') && a !== 'Bearer tok-anonymous') return { status: 200, body: '{}' };
    return {
      status: 401,
      headers: { 'www-authenticate': `Bearer realm="${realm()}",service="reg"` },
      body: '{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}',
    };
  });
}

const get = (ep: RegistryEndpoint) =>
  new RegistryClient(ep, NO_RETRY, egress).request({ method: 'GET', repository: 'team/app', path: 'manifests/v1' });

describe('RegistryClient sends credentials only to the host they are for', () => {
  it('a token service on another host gets none of the registry credentials', async () => {
    const tokens = await tokenService({ robot: 'pw' });
    const reg = await bearerRegistry(() => `http://${tokens.host}/token`);
    const err = await get({ host: reg.host, auth: { username: 'robot', password: 'pw' } }).catch((e) => e);
    expect(err).toBeInstanceOf(OciError);
    expect(err.code).toBe('UNAUTHORIZED');
    expect(err.message).toContain(`the token service ${tokens.host} got no credentials`);
    expect(tokens.seen.length).toBeGreaterThan(0);
    expect(tokens.seen.every((s) => s.authorization === undefined)).toBe(true);
  });

  it('a token service on another host gets the docker config entry that names its host, and only that', async () => {
    const tokens = await tokenService({ 'token-user': 'token-pw' });
    const reg = await bearerRegistry(() => `http://${tokens.host}/token`);
    const cfg = {
      auths: {
        [reg.host]: { username: 'registry-user', password: 'registry-pw' },
        [tokens.host]: { username: 'token-user', password: 'token-pw' },
      },
    };
    const res = await get({ host: reg.host, ...endpointCredentials(cfg, 'Secret ns/creds', reg.host, 'team/app') });
    expect(res.status).toBe(200);
    expect(tokens.seen.map((s) => s.authorization)).toEqual([basic('token-user', 'token-pw')]);
    expect(reg.seen.at(-1)?.authorization).toBe('Bearer tok-token-user');
    expect([...reg.seen, ...tokens.seen].some((s) => s.authorization === basic('registry-user', 'registry-pw'))).toBe(
      false,
    );
  });

  it('a token service on the registry host itself gets the registry credentials', async () => {
    let self = '';
    const reg = await serve((req) => {
      if (req.url?.startsWith('/token'))
        return req.headers.authorization === basic('robot', 'pw')
          ? { status: 200, body: '{"token":"tok-robot"}' }
          : { status: 401 };
      return req.headers.authorization === 'Bearer tok-robot'
        ? { status: 200, body: '{}' }
        : { status: 401, headers: { 'www-authenticate': `Bearer realm="http://${self}/token",service="reg"` } };
    });
    self = reg.host;
    const res = await get({ host: reg.host, auth: { username: 'robot', password: 'pw' } });
    expect(res.status).toBe(200);
    expect(reg.seen.find((s) => s.url.startsWith('/token'))?.authorization).toBe(basic('robot', 'pw'));
  });

  it('an identity token is exchanged with a refresh-token grant, never as basic credentials', async () => {
    let self = '';
    const reg = await serve((req, body) => {
      if (req.url?.startsWith('/token')) {
        const f = new URLSearchParams(body);
        return req.method === 'POST' && f.get('grant_type') === 'refresh_token' && f.get('refresh_token') === 'r-1'
          ? { status: 200, body: '{"access_token":"tok-id"}' }
          : { status: 401 };
      }
      return req.headers.authorization === 'Bearer tok-id'
        ? { status: 200, body: '{}' }
        : { status: 401, headers: { 'www-authenticate': `Bearer realm="http://${self}/token",service="reg"` } };
    });
    self = reg.host;
    const res = await get({ host: reg.host, auth: { identityToken: 'r-1' } });
    expect(res.status).toBe(200);
    const t = reg.seen.find((s) => s.url.startsWith('/token'))!;
    expect(t.method).toBe('POST');
    expect(new URLSearchParams(t.body).get('scope')).toBe('repository:team/app:pull');
    expect(t.authorization).toBeUndefined();
  });

  it('an absolute URL on another host (e.g. an upload Location) gets no Authorization header', async () => {
    const other = await serve(() => ({ status: 200, body: 'x' }));
    const reg = await serve((req) =>
      req.headers.authorization === basic('robot', 'pw')
        ? { status: 200, body: '{}' }
        : { status: 401, headers: { 'www-authenticate': 'Basic realm="reg"' } },
    );
    const client = new RegistryClient(
      { host: reg.host, auth: { username: 'robot', password: 'pw' } },
      NO_RETRY,
      egress,
    );
    expect((await client.request({ method: 'GET', repository: 'team/app', path: 'manifests/v1' })).status).toBe(200);
    expect(reg.seen.at(-1)?.authorization).toBe(basic('robot', 'pw'));
    const res = await client.request({ method: 'GET', repository: 'team/app', path: `http://${other.host}/upload/1` });
    expect(res.status).toBe(200);
    expect(other.seen).toHaveLength(1);
    expect(other.seen[0].authorization).toBeUndefined();
  });

  it('says which Secret had no entry for the host when the registry wants credentials', async () => {
    const reg = await serve(() => ({ status: 401, headers: { 'www-authenticate': 'Basic realm="reg"' } }));
    const cfg = { auths: { 'elsewhere.example.com': { username: 'u', password: 'p' } } };
    const err = await get({
      host: reg.host,
      ...endpointCredentials(cfg, 'Secret ns/creds', reg.host, 'team/app'),
    }).catch((e) => e);
    expect(err.code).toBe('UNAUTHORIZED');
    expect(err.message).toContain(`no credentials in Secret ns/creds for host ${reg.host}`);
    expect(reg.seen.every((s) => s.authorization === undefined)).toBe(true);
  });
});
