import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  defaultEgress,
  Egress,
  EgressBlocked,
  EgressConnectionFailed,
  EgressInvalidUrl,
  EgressRedirect,
  EgressTimeout,
  registerOwnListener,
  setDefaultEgress,
} from '../../src/net/guardedFetch.js';

interface Listening {
  server: Server;
  port: number;
  requests: string[];
  url: string;
}

const servers: Server[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, r) => r.end('ok'),
  host = '127.0.0.1',
  port = 0,
): Promise<Listening> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  servers.push(server);
  const p = (server.address() as AddressInfo).port;
  return { server, port: p, requests, url: `http://${host}:${p}` };
}

const loopbackAllowed = () => new Egress({ allowedCidrs: ['127.0.0.1/32'] });

describe('Egress.fetch', () => {
  it('refuses loopback by default and never connects', async () => {
    const s = await serve();
    const err = await defaultEgress()
      .fetch(`${s.url}/x`, { timeoutMs: 2000 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(EgressBlocked);
    expect(err.message).toBe(
      'blocked by egress policy: address 127.0.0.1 is loopback; allow it with egress.allowedCidrs',
    );
    expect(s.requests).toEqual([]);
  });

  it('refuses a hostname that resolves to a blocked address (localhost)', async () => {
    const s = await serve();
    const err = await new Egress().fetch(`http://localhost:${s.port}/`, { timeoutMs: 2000 }).catch((e) => e);
    expect(err).toBeInstanceOf(EgressBlocked);
    expect(err.reason).toMatch(/^address (127\.0\.0\.1|::1) of host localhost is loopback/);
    expect(s.requests).toEqual([]);
  });

  it('checks https hosts through the same lookup (the TLS socket connects to the checked address)', async () => {
    const asked: string[] = [];
    const e = new Egress({
      resolve: async (host) => {
        asked.push(host);
        return [{ address: '10.9.8.7', family: 4 }];
      },
    });
    await expect(e.fetch('https://internal.test/health', { timeoutMs: 2000 })).rejects.toThrow(
      'blocked by egress policy: address 10.9.8.7 of host internal.test is private; allow it with egress.allowedCidrs',
    );
    expect(asked).toEqual(['internal.test']);
  });

  it('refuses the metadata address literal before connecting', async () => {
    let resolved = 0;
    const e = new Egress({
      resolve: async () => {
        resolved++;
        return [];
      },
    });
    // Whether it connected is watched, not timed (a busy machine can take a second over anything).
    const connect = vi.spyOn(net, 'connect');
    const err = await e.fetch('http://169.254.169.254/latest/meta-data/', { timeoutMs: 5000 }).catch((x) => x);
    expect(err).toBeInstanceOf(EgressBlocked);
    expect(err.message).toContain('address 169.254.169.254 is a cloud metadata address');
    expect(resolved).toBe(0);
    expect(connect).not.toHaveBeenCalled();
    for (const u of ['http://[fd00:ec2::254]/', 'http://100.100.100.200/', 'http://[::ffff:169.254.169.254]/']) {
      await expect(e.fetch(u, { timeoutMs: 5000 })).rejects.toThrow(/cloud metadata address/);
    }
  });

  it('reaches a loopback receiver once egress.allowedCidrs allows it', async () => {
    const s = await serve();
    const res = await loopbackAllowed().fetch(`${s.url}/ok`, { timeoutMs: 2000 });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('ok');
    expect(s.requests).toEqual(['/ok']);
  });

  it("refuses the controller's own listeners even inside an allowed range", async () => {
    const api = await serve();
    const unregister = registerOwnListener('API', api.server);
    try {
      const err = await loopbackAllowed()
        .fetch(`${api.url}/api/v1/plans`, { method: 'POST', body: '{}', timeoutMs: 2000 })
        .catch((e) => e);
      expect(err).toBeInstanceOf(EgressBlocked);
      expect(err.reason).toBe(
        `address 127.0.0.1 port ${api.port} is the controller's own API listener; it cannot be allowed`,
      );
      // By name too: localhost resolves to the listener's address.
      const byName = new Egress({ allowedCidrs: ['127.0.0.0/8', '::1/128'] });
      await expect(byName.fetch(`http://localhost:${api.port}/api/v1/plans`, { timeoutMs: 2000 })).rejects.toThrow(
        /own API listener/,
      );
      expect(api.requests).toEqual([]);
    } finally {
      unregister();
    }
    // Unregistered (the controller stopped): an allowed address again.
    expect((await loopbackAllowed().fetch(`${api.url}/after`, { timeoutMs: 2000 })).status).toBe(200);
    expect(api.requests).toEqual(['/after']);
  });

  it('connects to the address it checked (no second lookup for DNS rebinding)', async () => {
    // Same port on two loopback addresses: .2 is allowed, .1 is not.
    const allowed = await serve((_q, r) => r.end('allowed'), '127.0.0.2');
    const internal = await serve((_q, r) => r.end('internal'), '127.0.0.1', allowed.port);
    const answers = ['127.0.0.2', '127.0.0.1'];
    const asked: string[] = [];
    const e = new Egress({
      allowedCidrs: ['127.0.0.2/32'],
      resolve: async (host) => {
        asked.push(host);
        const address = answers.shift() ?? '127.0.0.1';
        return [{ address, family: 4 }];
      },
    });
    const res = await e.fetch(`http://rebind.test:${allowed.port}/`, { timeoutMs: 2000 });
    expect(res.body.toString()).toBe('allowed');
    expect(asked).toEqual(['rebind.test']);
    expect(allowed.requests).toEqual(['/']);
    expect(internal.requests).toEqual([]);
  });

  it('refuses a name when any of its addresses is blocked', async () => {
    const s = await serve();
    const e = new Egress({
      allowedCidrs: ['127.0.0.1/32'],
      resolve: async () => [
        { address: '127.0.0.1', family: 4 },
        { address: '10.0.0.7', family: 4 },
      ],
    });
    await expect(e.fetch(`http://mixed.test:${s.port}/`, { timeoutMs: 2000 })).rejects.toThrow(
      'blocked by egress policy: address 10.0.0.7 of host mixed.test is private; allow it with egress.allowedCidrs',
    );
    expect(s.requests).toEqual([]);
  });

  it('does not follow a redirect to a blocked address and names only its host', async () => {
    const target = await serve(undefined, '127.0.0.2');
    const s = await serve((_q, r) =>
      r.writeHead(302, { location: `http://127.0.0.2:${target.port}/steal?token=abc` }).end(),
    );
    const err = await loopbackAllowed()
      .fetch(`${s.url}/hook`, { timeoutMs: 2000 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(EgressRedirect);
    expect(err.message).toBe(`answered 302 redirecting to host 127.0.0.2:${target.port}; redirects are not followed`);
    expect(err.message).not.toContain('token');
    expect(s.requests).toEqual(['/hook']);
    expect(target.requests).toEqual([]);
    // 'return' hands back the 3xx, still not followed.
    const res = await loopbackAllowed().fetch(`${s.url}/hook`, { timeoutMs: 2000, redirects: 'return' });
    expect(res.status).toBe(302);
    expect(target.requests).toEqual([]);
  });

  it('reads at most maxBodyBytes', async () => {
    const s = await serve((_q, r) => r.end('x'.repeat(200_000)));
    const res = await loopbackAllowed().fetch(s.url, { timeoutMs: 2000 });
    expect(res.body.length).toBe(64 * 1024);
    expect(res.truncated).toBe(true);
    const small = await loopbackAllowed().fetch(s.url, { timeoutMs: 2000, maxBodyBytes: 10 });
    expect(small.body.toString()).toBe('x'.repeat(10));
  });

  it('times out with a typed error', async () => {
    // The request's deadline (AbortSignal.timeout, on a timer of Node's own that fake timers cannot
    // reach) runs out when the test says, once the server holds the request: not timed against a
    // wall clock that a busy machine stretches.
    let deadline: { ms: number; expire: () => void } | undefined;
    vi.spyOn(AbortSignal, 'timeout').mockImplementation((ms) => {
      const c = new AbortController();
      deadline = {
        ms,
        expire: () => c.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
      };
      return c.signal;
    });
    let arrived!: () => void;
    const arrival = new Promise<void>((r) => {
      arrived = r;
    });
    const s = await serve(() => arrived()); // never answers
    const pending = loopbackAllowed()
      .fetch(s.url, { timeoutMs: 300 })
      .catch((e) => e);
    await arrival;
    expect(deadline?.ms).toBe(300);
    deadline?.expire();
    const err = await pending;
    expect(err).toBeInstanceOf(EgressTimeout);
    expect(err.message).toBe('timed out after 300ms');
  });

  it('reports refused connections by code only', async () => {
    const s = await serve();
    const url = s.url;
    servers.splice(0);
    await new Promise((r) => s.server.close(r));
    const err = await loopbackAllowed()
      .fetch(url, { timeoutMs: 2000 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(EgressConnectionFailed);
    expect(err.message).toBe('connection failed (ECONNREFUSED)');
  });

  it('takes only http and https URLs', async () => {
    await expect(loopbackAllowed().fetch('file:///etc/passwd', { timeoutMs: 100 })).rejects.toBeInstanceOf(
      EgressInvalidUrl,
    );
    await expect(loopbackAllowed().fetch('gopher://127.0.0.1/', { timeoutMs: 100 })).rejects.toThrow(
      'invalid URL: scheme gopher: is not allowed (only http and https)',
    );
  });

  it('uses the process default set by the runtime, and restores the previous one', async () => {
    const s = await serve();
    const before = defaultEgress();
    const restore = setDefaultEgress(loopbackAllowed());
    expect((await defaultEgress().fetch(s.url, { timeoutMs: 2000 })).status).toBe(200);
    restore();
    expect(defaultEgress()).toBe(before);
    await expect(defaultEgress().fetch(s.url, { timeoutMs: 2000 })).rejects.toBeInstanceOf(EgressBlocked);
  });
});
