import { createServer, type Server } from 'node:http';
import type { HttpAuthService, LoggerService } from '@backstage/backend-plugin-api';
import { AuthenticationError } from '@backstage/errors';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpProxy, McpSessions } from '../src/mcpProxy.js';

// Issue 31, point 5: "the MCP proxy's session map grows without bound". The proxy in a real
// express server in front of a stand-in MCP endpoint that opens a new session on every initialize:
// many sessions keep the table within its bounds (in all, per principal, idle time), and a session
// the proxy evicted gets a clear 404 (Streamable HTTP's "start a new session") instead of being
// forwarded.

let upstream: Server;
let proxy: Server;
let base = '';
let seq = 0;
/** Requests that reached the upstream with a session id, and the sessions it was told to end (DELETE). */
const forwarded: string[] = [];
const ended = new Map<string, string | undefined>();
let clock = Date.parse('2026-12-02T12:00:00Z');
const sessions = new McpSessions({ maxSessions: 5, maxSessionsPerPrincipal: 2, idleTtlMs: 60_000, now: () => clock });

/** Authenticates `Bearer user:<name>` as that user. */
const httpAuth = {
  credentials: async (req: express.Request) => {
    const m = /^Bearer (user:default\/\w+)$/.exec(req.headers.authorization ?? '');
    if (!m) throw new AuthenticationError('no');
    return { $$type: '@backstage/BackstageCredentials', principal: { type: 'user', userEntityRef: m[1] } };
  },
} as unknown as HttpAuthService;
const logger = { warn() {}, error() {}, info() {}, debug() {}, child: () => logger } as unknown as LoggerService;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const sid = req.headers['mcp-session-id'];
    if (req.method === 'DELETE' && typeof sid === 'string') {
      ended.set(sid, req.headers['x-kpromo-user'] as string | undefined);
      res.writeHead(200);
      return void res.end();
    }
    if (typeof sid === 'string') forwarded.push(sid);
    if (typeof sid === 'string' && ended.has(sid)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end(
        JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'session not found' } }),
      );
    }
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(typeof sid === 'string' ? {} : { 'mcp-session-id': `s${++seq}` }),
    });
    req.resume();
    req.on('end', () => res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} })));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const app = express();
  app.all(
    '/mcp',
    createMcpProxy({
      mcpUrl: `http://127.0.0.1:${(upstream.address() as { port: number }).port}/mcp`,
      token: 'proxy-token-0123456789',
      httpAuth,
      logger,
      sessions,
    }),
  );
  proxy = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => proxy.once('listening', () => r()));
  base = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => proxy.close(() => r()));
  await new Promise<void>((r) => upstream.close(() => r()));
});

async function post(user: string, session?: string) {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${user}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session ? { 'mcp-session-id': session } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: session ? 'tools/list' : 'initialize', params: {} }),
  });
  const json = (await res.json()) as { error?: { message: string } };
  return { status: res.status, session: res.headers.get('mcp-session-id') ?? undefined, json };
}

const user = (i: number) => `user:default/u${i}`;

describe('MCP proxy session table', () => {
  it('stays within its bounds however many sessions are opened, and evicted sessions get a clear 404', async () => {
    const opened: Array<{ user: string; session: string }> = [];
    for (let round = 0; round < 5; round++)
      for (let i = 0; i < 6; i++) {
        const r = await post(user(i));
        expect(r.status).toBe(200);
        opened.push({ user: user(i), session: r.session! });
        expect(sessions.size).toBeLessThanOrEqual(5);
      }
    expect(opened).toHaveLength(30);
    // The last five opened are the live ones; u5's own last two fit in its per-principal cap.
    const live = opened.slice(-5);
    for (const s of live) expect((await post(s.user, s.session)).status, s.session).toBe(200);
    // Every other session was evicted: its next request is refused with a clear error, never forwarded.
    const before = forwarded.length;
    const first = opened.at(-6)!; // the last one evicted
    const gone = await post(first.user, first.session);
    expect(gone.status).toBe(404);
    expect(gone.json.error?.message).toMatch(
      new RegExp(
        `^MCP session ${first.session} was closed by the proxy \\((${first.user.replace('/', '\\/')} opened more than 2 MCP sessions|the proxy holds at most 5 MCP sessions)\\); start a new session \\(initialize\\)$`,
      ),
    );
    // The proxy remembers the last evictions (bounded too): refused without reaching the upstream…
    for (const s of opened.slice(-10, -5)) expect((await post(s.user, s.session)).status, s.session).toBe(404);
    expect(forwarded.length).toBe(before);
    // …and every evicted session was ended upstream as its owner, so an older one is gone there too.
    await expect.poll(() => ended.size).toBe(25);
    for (const s of opened.slice(0, -5)) expect(ended.get(s.session), s.session).toBe(s.user);
    for (const s of opened.slice(0, -10)) expect((await post(s.user, s.session)).status, s.session).toBe(404);
  });

  it('caps the sessions of one principal: their oldest is evicted first', async () => {
    const a = await post(user(7));
    const b = await post(user(7));
    const c = await post(user(7));
    const evicted = await post(user(7), a.session);
    expect(evicted.status).toBe(404);
    expect(evicted.json.error?.message).toBe(
      `MCP session ${a.session} was closed by the proxy (${user(7)} opened more than 2 MCP sessions); start a new session (initialize)`,
    );
    expect((await post(user(7), b.session)).status).toBe(200);
    expect((await post(user(7), c.session)).status).toBe(200);
    // Still pinned to its principal.
    expect((await post(user(8), c.session)).status).toBe(403);
  });

  it('evicts sessions idle longer than the TTL', async () => {
    const s = await post(user(9));
    clock += 60_001;
    const idle = await post(user(9), s.session);
    expect(idle.status).toBe(404);
    expect(idle.json.error?.message).toBe(
      `MCP session ${s.session} was closed by the proxy (unused for more than 60s); start a new session (initialize)`,
    );
    expect(sessions.size).toBe(0);
  });
});

describe('McpSessions', () => {
  it('forgets evicted ids beyond its bound too (the tombstones do not grow either)', () => {
    let t = 0;
    const s = new McpSessions({ maxSessions: 3, maxSessionsPerPrincipal: 3, idleTtlMs: 10, now: () => t });
    for (let i = 0; i < 100; i++) s.add(`id${i}`, `user:default/x${i % 4}`);
    expect(s.size).toBe(3);
    expect(s.lookup('id99')).toEqual({ owner: 'user:default/x3' });
    expect(s.lookup('id95')).toEqual({ evicted: 'the proxy holds at most 3 MCP sessions' });
    expect(s.lookup('id0')).toBeUndefined(); // tombstone forgotten: at most maxSessions remembered
    t = 11;
    expect(s.lookup('id99')).toEqual({ evicted: 'unused for more than 1s' });
    expect(s.size).toBe(0);
  });
});
