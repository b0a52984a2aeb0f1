import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPortClient, PORT_REGIONS, PortApiError, type PortClientEvent } from '../src/index.js';

/**
 * A small local HTTP server that plays Port's documented behaviour, one scripted answer at a time:
 * - `POST /v1/auth/access_token` with clientId/clientSecret answers `{accessToken, expiresIn}`
 *   (3 h by default) and 401 with Port's error body for wrong credentials;
 * - an expired or revoked token answers 401 (`{ok: false, error: 'unauthorized', message}`);
 * - rate limiting answers 429 with `Retry-After` or `x-ratelimit-*` headers
 *   (https://docs.port.io/api-reference/rate-limits), overload answers 5xx.
 * Shapes are Port's (checked against the spec by exporter/test/portStandIn.ts, which the exporter
 * and backend tests use); this server only scripts the failures.
 */
const ID = 'client-id';
const SECRET = 'client-secret-do-not-leak-0123456789';

type Answer = { status: number; headers?: Record<string, string>; body?: unknown };
interface Seen {
  method: string;
  path: string;
  auth?: string;
  at: number;
}

let server: Server;
let url: string;
let seen: Seen[];
/** Scripted answers for non-auth calls, used in order; then 200 with a blueprint. */
let script: Answer[];
let tokens: Set<string>;
let tokenSeq: number;
let expiresIn: number;

const portError = (status: number, error: string, message: string): Answer => ({
  status,
  body: { ok: false, error, message },
});

function handle(req: IncomingMessage, res: ServerResponse, body: string) {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  seen.push({ method: req.method ?? '', path, auth: req.headers.authorization, at: Date.now() });
  const send = (a: Answer) => {
    res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
    res.end(JSON.stringify(a.body ?? {}));
  };
  if (path === '/v1/auth/access_token') {
    const b = JSON.parse(body) as { clientId?: string; clientSecret?: string };
    if (b.clientId !== ID || b.clientSecret !== SECRET)
      return send(portError(401, 'unauthorized', 'Invalid client credentials'));
    const t = `tok-${++tokenSeq}`;
    tokens.add(t);
    return send({ status: 200, body: { ok: true, accessToken: t, expiresIn, tokenType: 'Bearer' } });
  }
  const next = script.shift();
  if (next) return send(next);
  const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (!token || !tokens.has(token)) return send(portError(401, 'unauthorized', 'token expired or missing'));
  const identifier = path.split('/').pop();
  send({ status: 200, body: { ok: true, blueprint: { identifier, title: 'T', schema: { properties: {} } } } });
}

beforeEach(async () => {
  seen = [];
  script = [];
  tokens = new Set();
  tokenSeq = 0;
  expiresIn = 3 * 3600;
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => handle(req, res, body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const client = (o: { maxAttempts?: number; events?: PortClientEvent[]; baseUrl?: string; secret?: string } = {}) =>
  createPortClient({
    baseUrl: o.baseUrl ?? url,
    clientId: ID,
    clientSecret: o.secret ?? SECRET,
    maxAttempts: o.maxAttempts ?? 4,
    baseBackoffMs: 20,
    onEvent: (e) => o.events?.push(e),
  });
const getBlueprint = (c: ReturnType<typeof client>, id = 'svc') =>
  c.api.GET('/v1/blueprints/{identifier}', { params: { path: { identifier: id } } });
const apiCalls = () => seen.filter((s) => s.path !== '/v1/auth/access_token');

describe('Port client', () => {
  it('fetches one token for concurrent calls and reuses it until shortly before it expires', async () => {
    const c = client();
    const results = await Promise.all([getBlueprint(c, 'a'), getBlueprint(c, 'b'), getBlueprint(c, 'c')]);
    expect(results.map((r) => r.data?.blueprint.identifier)).toEqual(['a', 'b', 'c']);
    expect(c.stats.tokenFetches).toBe(1);
    expect(apiCalls().every((s) => s.auth === 'Bearer tok-1')).toBe(true);
  });

  it('refreshes the token before expiresIn, without waiting for a 401', async () => {
    expiresIn = 1;
    const c = client();
    await getBlueprint(c);
    await new Promise((r) => setTimeout(r, 1_000));
    await getBlueprint(c);
    expect(c.stats.tokenFetches).toBe(2);
    expect(apiCalls().map((s) => s.auth)).toEqual(['Bearer tok-1', 'Bearer tok-2']);
  });

  it('on a 401 fetches a new token once and retries the call', async () => {
    const events: PortClientEvent[] = [];
    const c = client({ events });
    await getBlueprint(c);
    tokens.clear(); // Port revoked or expired every token
    const r = await getBlueprint(c, 'after');
    expect(r.data?.blueprint.identifier).toBe('after');
    expect(c.stats.tokenFetches).toBe(2);
    expect(apiCalls().map((s) => s.auth)).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-2']);
    expect(events.filter((e) => e.type === 'token-rejected')).toHaveLength(1);
  });

  it('returns a 401 that a new token does not cure, after one refresh (no loop)', async () => {
    const c = client();
    script = [
      portError(401, 'unauthorized', 'token expired or missing'),
      portError(401, 'unauthorized', 'token expired or missing'),
    ];
    const r = await getBlueprint(c);
    expect(r.response.status).toBe(401);
    expect(r.error).toMatchObject({ message: 'token expired or missing' });
    expect(c.stats.tokenFetches).toBe(2);
    expect(apiCalls()).toHaveLength(2);
  });

  it('waits as long as Retry-After says on a 429', async () => {
    const c = client();
    await getBlueprint(c); // token first, so only the throttled call is timed
    script = [{ ...portError(429, 'rate_limited', 'Too many requests'), headers: { 'retry-after': '1' } }];
    const r = await getBlueprint(c, 'later');
    expect(r.data?.blueprint.identifier).toBe('later');
    const [throttled, retried] = apiCalls().slice(-2);
    expect(retried.at - throttled.at).toBeGreaterThanOrEqual(950);
    expect(c.stats.retries).toBe(1);
  });

  it("waits for Port's x-ratelimit-reset on a 429 without Retry-After", async () => {
    const c = client();
    await getBlueprint(c);
    script = [
      {
        ...portError(429, 'rate_limited', 'Too many requests'),
        headers: {
          'x-ratelimit-period': '300',
          'x-ratelimit-limit': '5000',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': '1',
        },
      },
    ];
    const r = await getBlueprint(c, 'later');
    expect(r.response.status).toBe(200);
    const [throttled, retried] = apiCalls().slice(-2);
    expect(retried.at - throttled.at).toBeGreaterThanOrEqual(950);
  });

  it('retries 5xx with backoff and succeeds', async () => {
    const events: PortClientEvent[] = [];
    const c = client({ events });
    script = [portError(500, 'internal_error', 'boom'), portError(503, 'unavailable', 'busy')];
    const r = await getBlueprint(c);
    expect(r.data?.blueprint.identifier).toBe('svc');
    expect(c.stats.retries).toBe(2);
    expect(events.filter((e) => e.type === 'retry').map((e) => (e as { status?: number }).status)).toEqual([500, 503]);
  });

  it('gives up after maxAttempts and returns the last answer with Port’s error', async () => {
    const c = client({ maxAttempts: 3 });
    script = Array.from({ length: 5 }, () => portError(502, 'bad_gateway', 'upstream down'));
    const r = await getBlueprint(c);
    expect(r.response.status).toBe(502);
    expect(r.error).toMatchObject({ message: 'upstream down' });
    expect(apiCalls()).toHaveLength(3);
  });

  it('names method, path, status and Port’s message when the token is refused, never the secret', async () => {
    const c = client({ secret: 'wrong-secret-0123456789' });
    const err = await getBlueprint(c).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PortApiError);
    expect((err as Error).message).toBe('Port POST /v1/auth/access_token answered 401: Invalid client credentials');
    expect((err as Error).message).not.toContain('wrong-secret');
    expect(apiCalls()).toEqual([]);
  });

  it('retries network errors, then throws naming method and path', async () => {
    const c = client({ maxAttempts: 2 });
    await getBlueprint(c);
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    const err = (await getBlueprint(c).catch((e: unknown) => e)) as PortApiError;
    expect(err).toBeInstanceOf(PortApiError);
    expect(err.message).toMatch(
      /^Port GET \/v1\/blueprints\/svc failed: no answer after 2 attempt\(s\): .*ECONNREFUSED/,
    );
    expect(c.stats.calls).toBe(2 + 2); // token + first call, then two attempts
    server = createServer(); // for afterEach
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });

  it('sends credentials only to the configured Port API: no other base URL, no redirects', async () => {
    const c = client();
    const err = await c.api
      .GET('/v1/blueprints/{identifier}', { baseUrl: 'http://127.0.0.2:9', params: { path: { identifier: 'x' } } })
      .catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/refused: http:\/\/127\.0\.0\.2:9 is not the configured Port API/);
    expect(seen).toEqual([]);
    script = [{ status: 307, headers: { location: 'http://127.0.0.2:9/v1/steal' } }];
    const r = await getBlueprint(c);
    expect(r.response.status).toBe(307);
    expect(() => client({ baseUrl: 'ftp://api.port.io' })).toThrow(/must be http\(s\)/);
    expect(() => client({ baseUrl: 'https://user:pw@api.port.io' })).toThrow(/must not carry credentials/);
    expect(() => client({ baseUrl: PORT_REGIONS.us })).not.toThrow();
  });
});
