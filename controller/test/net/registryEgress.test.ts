import { createServer, type IncomingMessage, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { Egress } from '../../src/net/guardedFetch.js';
import { OciError } from '../../src/oci/errors.js';
import { RegistryClient, type RegistryEndpoint } from '../../src/oci/registryClient.js';
import { classify } from '../../src/reconcile/plan/errors.js';

// Registry traffic goes through the same egress guard as webhooks: the registry host, the token
// service a WWW-Authenticate challenge names and every redirect Location. The "registries" below are
// tiny node HTTP servers playing an ATTACKER-CONTROLLED registry: they answer with challenges and
// redirects pointing at the cloud metadata address or at an internal service, hoping the controller
// connects there (SSRF) and hands over credentials.

interface Seen {
  method: string;
  url: string;
  authorization?: string;
  body: string;
}

const servers: Server[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** An HTTP server on `address` recording every TCP connection and request; `handle` answers. */
type Answer = { status: number; headers?: Record<string, string>; body?: string };

async function serve(
  handle: (req: IncomingMessage, body: string) => Answer,
  address = '127.0.0.1',
): Promise<{ host: string; seen: Seen[]; connections: () => number }> {
  const seen: Seen[] = [];
  let connections = 0;
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, body });
      const r = handle(req, body);
      res.writeHead(r.status, r.headers).end(r.body ?? '');
    });
  });
  srv.on('connection', () => connections++);
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, address, r));
  return { host: `${address}:${(srv.address() as AddressInfo).port}`, seen, connections: () => connections };
}

/** The internal service the attacker wants reached: on 127.0.0.2, which the operator did not allow. */
const internalService = () => serve(() => ({ status: 200, body: '{"token":"internal"}' }), '127.0.0.2');

const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
const NO_RETRY = { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 };
const RETRY = { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 };
const ROBOT = { username: 'robot', password: 'registry-secret-pw' };
/** The operator allowed the registries' address (127.0.0.1), nothing else. */
const operatorEgress = new Egress({ allowedCidrs: ['127.0.0.1/32'] });
afterAll(() => operatorEgress.close());

/** The attacker registry: every request is answered 401 with a Bearer challenge naming `realm`. */
const challengingRegistry = (realm: () => string) =>
  serve(() => ({ status: 401, headers: { 'www-authenticate': `Bearer realm="${realm()}",service="reg"` } }));

const get = (ep: RegistryEndpoint, path = 'manifests/v1', egress = operatorEgress, retry = NO_RETRY) =>
  new RegistryClient(ep, retry, egress).request({ method: 'GET', repository: 'team/app', path });

describe('registry token service (Bearer realm) through the egress guard', () => {
  it('refuses a realm at the cloud metadata address, clearly and without retrying', async () => {
    const reg = await challengingRegistry(() => 'http://169.254.169.254/latest/meta-data/iam/security-credentials/');
    // Where it connected is watched, not how long it took (a busy machine can take seconds over anything).
    const connect = vi.spyOn(net, 'connect');
    const err = await get({ host: reg.host, auth: ROBOT }, 'manifests/v1', operatorEgress, RETRY).catch((e) => e);
    expect(err).toBeInstanceOf(OciError);
    expect(err.message).toBe(
      `${reg.host}/team/app: token service http://169.254.169.254/latest/meta-data/iam/security-credentials/ refused: blocked by egress policy: address 169.254.169.254 is a cloud metadata address; it is never reachable, whatever egress.allowedCidrs lists`,
    );
    // Configuration, not an outage: the step fails for good instead of retrying against the registry.
    expect(classify(err)).toMatchObject({ permanent: true, reason: 'EgressBlocked' });
    expect(reg.seen).toHaveLength(1);
    // Connected to the registry only, never towards the metadata address.
    const hosts = connect.mock.calls.map(([o]) => (o as { host?: string }).host);
    expect(hosts).toContain('127.0.0.1');
    expect(hosts).not.toContain('169.254.169.254');
  });

  it('never connects to an internal service the realm names', async () => {
    const internal = await internalService();
    const reg = await challengingRegistry(() => `http://${internal.host}/token`);
    const err = await get({ host: reg.host, auth: ROBOT }).catch((e) => e);
    expect(err).toBeInstanceOf(OciError);
    expect(err.message).toContain(
      `token service http://${internal.host}/token refused: blocked by egress policy: address 127.0.0.2 is loopback; allow it with egress.allowedCidrs`,
    );
    expect(internal.connections()).toBe(0);
    expect(internal.seen).toHaveLength(0);
  });

  it('a realm named by host name is checked on the address it resolves to', async () => {
    const internal = await internalService();
    const port = internal.host.split(':')[1];
    const egress = new Egress({
      allowedCidrs: ['127.0.0.1/32'],
      resolve: async (h) => (h === 'tokens.attacker.test' ? [{ address: '127.0.0.2', family: 4 }] : []),
    });
    try {
      const reg = await challengingRegistry(() => `http://tokens.attacker.test:${port}/token`);
      const err = await get({ host: reg.host, auth: ROBOT }, 'manifests/v1', egress).catch((e) => e);
      expect(err.message).toContain(
        'blocked by egress policy: address 127.0.0.2 of host tokens.attacker.test is loopback; allow it with egress.allowedCidrs',
      );
      expect(internal.connections()).toBe(0);
    } finally {
      await egress.close();
    }
  });

  it('a realm on another (allowed) host gets none of the registry credentials, basic or identity token', async () => {
    const tokens = await serve(() => ({ status: 200, body: '{"token":"tok-anonymous"}' }));
    const reg = await challengingRegistry(() => `http://${tokens.host}/token`);
    await get({ host: reg.host, auth: ROBOT }).catch((e) => e);
    await get({ host: reg.host, auth: { identityToken: 'refresh-secret' } }).catch((e) => e);
    expect(tokens.seen.length).toBe(2);
    expect(tokens.seen.every((s) => s.authorization === undefined && s.method === 'GET')).toBe(true);
    expect(tokens.seen.some((s) => s.body.includes('refresh-secret'))).toBe(false);
  });
});

describe('registry redirects through the egress guard', () => {
  /** The attacker registry accepts the credentials, then redirects blob GETs to `location`. */
  const redirectingRegistry = (location: () => string) =>
    serve((req): Answer => {
      if (req.headers.authorization !== basic(ROBOT.username, ROBOT.password))
        return { status: 401, headers: { 'www-authenticate': 'Basic realm="reg"' } };
      if (req.url?.includes('/blobs/')) return { status: 307, headers: { location: location() } };
      return { status: 200 };
    });

  it('does not follow a redirect to an internal service or the metadata address', async () => {
    const internal = await internalService();
    for (const [target, reason] of [
      [`http://${internal.host}/latest`, 'address 127.0.0.2 is loopback; allow it with egress.allowedCidrs'],
      [
        'http://169.254.169.254/latest/meta-data/',
        'address 169.254.169.254 is a cloud metadata address; it is never reachable, whatever egress.allowedCidrs lists',
      ],
    ]) {
      const reg = await redirectingRegistry(() => target);
      const err = await get({ host: reg.host, auth: ROBOT }, `blobs/sha256:${'a'.repeat(64)}`).catch((e) => e);
      expect(err).toBeInstanceOf(OciError);
      expect(err.message).toContain(`GET blobs/sha256:${'a'.repeat(64)} redirected to ${new URL(target).origin}`);
      expect(err.message).toContain(`blocked by egress policy: ${reason}`);
    }
    expect(internal.connections()).toBe(0);
  });

  it('follows a redirect to allowed blob storage on another host, without the registry credentials', async () => {
    const storage = await serve(() => ({ status: 200, body: 'blob-bytes' }));
    const reg = await redirectingRegistry(() => `http://${storage.host}/bucket/blob?sig=1`);
    const res = await get({ host: reg.host, auth: ROBOT }, `blobs/sha256:${'a'.repeat(64)}`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('blob-bytes');
    expect(storage.seen).toEqual([{ method: 'GET', url: '/bucket/blob?sig=1', authorization: undefined, body: '' }]);
  });

  it('refuses a redirect to another scheme', async () => {
    const reg = await redirectingRegistry(() => 'file:///etc/passwd');
    const err = await get({ host: reg.host, auth: ROBOT }, `blobs/sha256:${'a'.repeat(64)}`).catch((e) => e);
    expect(err).toBeInstanceOf(OciError);
    expect(err.message).toContain('redirected to a file: URL; only http and https are followed');
  });
});

describe('the registry host itself through the egress guard', () => {
  it('a loopback registry needs egress.allowedCidrs; with it, it is reached', async () => {
    const reg = await serve(() => ({ status: 200, body: '{}' }));
    const strict = new Egress();
    try {
      const err = await get({ host: reg.host }, 'manifests/v1', strict, RETRY).catch((e) => e);
      expect(err).toBeInstanceOf(OciError);
      expect(err.message).toBe(
        `${reg.host}/team/app: GET manifests/v1 refused: blocked by egress policy: address 127.0.0.1 is loopback; allow it with egress.allowedCidrs`,
      );
      expect(reg.connections()).toBe(0);
      expect((await get({ host: reg.host })).status).toBe(200);
      expect(reg.connections()).toBe(1);
    } finally {
      await strict.close();
    }
  });

  it('an Environment naming the metadata address as its registry gets nothing from it', async () => {
    const err = await get({ host: '169.254.169.254', insecure: true, auth: ROBOT }).catch((e) => e);
    expect(err).toBeInstanceOf(OciError);
    expect(err.message).toContain('blocked by egress policy: address 169.254.169.254 is a cloud metadata address');
  });
});
