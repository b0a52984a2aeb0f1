import type { BackstageCredentials, HttpAuthService, LoggerService } from '@backstage/backend-plugin-api';
import { namespaceProblem } from '@kpromo/plugin-promotions-common';
import type { Request, Response } from 'express';
import { type Actor, actorHeaders } from './controllerClient.js';
import { identityOf } from './service.js';

// 2025 sessions (mcp-session-id, last-event-id) and the 2026-07-28 standard headers the controller
// checks against the body (mcp-method, mcp-name, and mcp-param-* mirrored tool arguments).
const FORWARD_REQUEST = [
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'last-event-id',
];
const FORWARD_REQUEST_PREFIX = 'mcp-param-';
const FORWARD_RESPONSE = ['content-type', 'mcp-session-id', 'mcp-protocol-version', 'cache-control'];
const MAX_BODY = 1024 * 1024;

type RpcId = string | number | null;

/** The JSON-RPC id of a single request body, so that error answers name the request. */
function idOf(body: Buffer | undefined): RpcId {
  if (!body) return null;
  try {
    const m = JSON.parse(body.toString('utf8')) as { id?: unknown; method?: unknown };
    return m && typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number') ? m.id : null;
  } catch {
    return null;
  }
}

const rpcError = (res: Response, status: number, message: string, id: RpcId = null) => {
  if (!res.headersSent) res.status(status).json({ jsonrpc: '2.0', error: { code: -32000, message }, id });
};

/** The message of a JSON-RPC or `{error}` answer, else the text itself. */
function upstreamMessage(text: string): string {
  try {
    const e = (JSON.parse(text) as { error?: string | { message?: string } }).error;
    const m = typeof e === 'string' ? e : e?.message;
    if (m) return m;
  } catch {
    // not JSON
  }
  return text.slice(0, 500);
}

/**
 * Why a request names a namespace that is not a namespace name (RFC 1123 label), if it does: the
 * mirrored `mcp-param-namespace` header, or a tool call's `arguments.namespace` (a batch's too).
 * The shared check of every door: refused here, before the request goes upstream with the token.
 */
function badNamespace(req: Request, body: Buffer | undefined): string | undefined {
  const header = req.headers['mcp-param-namespace'];
  if (typeof header === 'string' && header !== '') {
    const problem = namespaceProblem(header, 'mcp-param-namespace');
    if (problem) return problem;
  }
  if (!body) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined; // not JSON: the controller answers it
  }
  for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
    const ns = (m as { params?: { arguments?: { namespace?: unknown } } } | null)?.params?.arguments?.namespace;
    if (ns === undefined || ns === null || ns === '') continue;
    const problem = namespaceProblem(ns, 'arguments.namespace');
    if (problem) return problem;
  }
  return undefined;
}

async function readBody(req: Request): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw Object.assign(new Error('request body too large'), { status: 413 });
    chunks.push(c as Buffer);
  }
  return chunks.length ? Buffer.concat(chunks) : undefined;
}

/** Bounds of the proxy's session table (see {@link McpSessions}). */
export interface McpSessionLimits {
  /** Sessions remembered at most; a new one beyond evicts the least recently used (default 10000). */
  maxSessions?: number;
  /** Sessions of one principal at most; a new one beyond evicts that principal's least recently used (default 20). */
  maxSessionsPerPrincipal?: number;
  /** A session unused this long is evicted (default 30 minutes). */
  idleTtlMs?: number;
  now?: () => number;
}

/**
 * Which principal opened each MCP session, bounded: at most `maxSessions` in all and
 * `maxSessionsPerPrincipal` per principal (least recently used evicted first), and none idle longer
 * than `idleTtlMs`. An evicted session id is remembered (as many as `maxSessions`, oldest forgotten
 * first) so that its next request gets a clear 404 (the MCP answer for "start a new session")
 * instead of being forwarded unpinned.
 */
export class McpSessions {
  private readonly sessions = new Map<string, { owner: string; lastUsed: number; close?: () => void }>();
  private readonly perOwner = new Map<string, number>();
  private readonly evicted = new Map<string, string>();
  readonly maxSessions: number;
  readonly maxPerPrincipal: number;
  readonly idleTtlMs: number;
  private readonly now: () => number;

  constructor(o: McpSessionLimits = {}) {
    this.maxSessions = Math.max(1, Math.floor(o.maxSessions ?? 10_000));
    this.maxPerPrincipal = Math.max(1, Math.floor(o.maxSessionsPerPrincipal ?? 20));
    this.idleTtlMs = o.idleTtlMs ?? 30 * 60_000;
    this.now = o.now ?? Date.now;
  }

  get size(): number {
    return this.sessions.size;
  }

  /** The owner of a live session (touching it), or why it is gone, or nothing when unknown. */
  lookup(id: string): { owner: string } | { evicted: string } | undefined {
    this.expire();
    const s = this.sessions.get(id);
    if (s) {
      // Most recently used last: the Map's order is the eviction order.
      this.sessions.delete(id);
      this.sessions.set(id, { ...s, lastUsed: this.now() });
      return { owner: s.owner };
    }
    const why = this.evicted.get(id);
    return why ? { evicted: why } : undefined;
  }

  /**
   * Records a session the upstream just opened for `owner`, evicting to stay within the bounds.
   * `close` ends it upstream when it is evicted.
   */
  add(id: string, owner: string, close?: () => void): void {
    if (this.sessions.has(id)) return;
    this.expire();
    if ((this.perOwner.get(owner) ?? 0) >= this.maxPerPrincipal)
      for (const [k, v] of this.sessions)
        if (v.owner === owner) {
          this.evict(k, `${owner} opened more than ${this.maxPerPrincipal} MCP sessions`);
          break;
        }
    if (this.sessions.size >= this.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest !== undefined) this.evict(oldest, `the proxy holds at most ${this.maxSessions} MCP sessions`);
    }
    this.sessions.set(id, { owner, lastUsed: this.now(), close });
    this.perOwner.set(owner, (this.perOwner.get(owner) ?? 0) + 1);
    this.evicted.delete(id);
  }

  /** A session ended (DELETE): forgotten, not an eviction. */
  remove(id: string): void {
    const s = this.sessions.get(id);
    if (!s) return;
    this.sessions.delete(id);
    this.release(s.owner);
  }

  private release(owner: string) {
    const n = (this.perOwner.get(owner) ?? 1) - 1;
    if (n > 0) this.perOwner.set(owner, n);
    else this.perOwner.delete(owner);
  }

  private evict(id: string, why: string) {
    const s = this.sessions.get(id);
    if (!s) return;
    this.sessions.delete(id);
    this.release(s.owner);
    this.evicted.set(id, why);
    if (this.evicted.size > this.maxSessions) {
      const oldest = this.evicted.keys().next().value;
      if (oldest !== undefined) this.evicted.delete(oldest);
    }
    try {
      s.close?.();
    } catch {
      // best effort: the upstream ends idle sessions itself
    }
  }

  /** Evicts sessions idle longer than the TTL (oldest first: stops at the first live one). */
  private expire() {
    const limit = this.now() - this.idleTtlMs;
    for (const [k, v] of this.sessions) {
      if (v.lastUsed >= limit) break;
      this.evict(k, `unused for more than ${Math.ceil(this.idleTtlMs / 1000)}s`);
    }
  }
}

/**
 * Streamable HTTP reverse proxy to the controller's MCP endpoint. The Backstage caller (user or
 * service principal) is authenticated here; upstream the proxy authenticates with the backend's
 * token (`promotions.controller.token`) and names the caller in x-kpromo-user (+ the user's
 * ownership refs in x-kpromo-groups), so the controller authorises every tool call as that caller.
 * Sessions are pinned to the principal that opened them, responses (JSON or SSE) are streamed chunk
 * by chunk, and a client that goes away aborts the upstream call.
 */
export function createMcpProxy(o: {
  mcpUrl?: string;
  /** Bearer token for the controller (promotions.controller.token, formerly mcpToken). */
  token?: string;
  httpAuth: HttpAuthService;
  logger: LoggerService;
  /** The identity (user + groups) to act as; the caller's identity ref without groups if omitted. */
  actorOf?: (credentials: BackstageCredentials) => Promise<Actor>;
  /** Bounds of the session table (or the table itself, for tests). */
  sessions?: McpSessionLimits | McpSessions;
}) {
  const owners = o.sessions instanceof McpSessions ? o.sessions : new McpSessions(o.sessions);
  return async (req: Request, res: Response) => {
    let credentials: Awaited<ReturnType<HttpAuthService['credentials']>>;
    try {
      credentials = await o.httpAuth.credentials(req, { allow: ['user', 'service'] });
    } catch {
      res.setHeader('WWW-Authenticate', 'Bearer realm="backstage"');
      return rpcError(res, 401, 'authentication required (Backstage user or service token)');
    }
    if (!o.mcpUrl || !o.token)
      return rpcError(res, 503, 'MCP proxy not configured (promotions.controller.mcpUrl / token)');
    if (!['GET', 'POST', 'DELETE'].includes(req.method)) {
      res.setHeader('Allow', 'GET, POST, DELETE');
      return rpcError(res, 405, 'method not allowed');
    }
    const who = identityOf({ kind: 'backstage', credentials });
    const session = req.headers['mcp-session-id'];
    const known = typeof session === 'string' ? owners.lookup(session) : undefined;
    if (known && 'evicted' in known)
      // 404 is Streamable HTTP's "session gone": the client starts a new one (initialize).
      return rpcError(
        res,
        404,
        `MCP session ${String(session).slice(0, 100)} was closed by the proxy (${known.evicted}); start a new session (initialize)`,
      );
    if (known && known.owner !== who) return rpcError(res, 403, 'this MCP session belongs to another principal');

    let body: Buffer | undefined;
    try {
      body = req.method === 'POST' ? await readBody(req) : undefined;
    } catch (e) {
      return rpcError(res, (e as { status?: number }).status ?? 400, (e as Error).message);
    }
    const nsProblem = badNamespace(req, body);
    if (nsProblem) return rpcError(res, 400, `invalid request: ${nsProblem}`, idOf(body));
    const ac = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) ac.abort();
    };
    res.on('close', onClose);
    let actor: Actor;
    try {
      actor = o.actorOf ? await o.actorOf(credentials) : { user: who };
    } catch (e) {
      res.off('close', onClose);
      return rpcError(res, 500, `cannot resolve the caller's identity: ${(e as Error).message}`, idOf(body));
    }
    const headers: Record<string, string> = { authorization: `Bearer ${o.token}`, ...actorHeaders(actor) };
    for (const h of FORWARD_REQUEST) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    for (const [h, v] of Object.entries(req.headers))
      if (h.startsWith(FORWARD_REQUEST_PREFIX) && typeof v === 'string') headers[h] = v;
    let upstream: globalThis.Response;
    try {
      upstream = await fetch(o.mcpUrl, {
        method: req.method,
        headers,
        body: body ? new Uint8Array(body) : undefined,
        signal: ac.signal,
      });
    } catch (e) {
      res.off('close', onClose);
      if (ac.signal.aborted) return;
      o.logger.warn(`MCP upstream unreachable: ${(e as Error).message}`);
      return rpcError(res, 502, 'MCP upstream unreachable', idOf(body));
    }
    if (upstream.status === 401) {
      // The proxy's own token was refused: a configuration problem, not the caller's.
      const text = await upstream.text().catch(() => '');
      o.logger.error(`controller MCP refused the proxy token (401): ${text.slice(0, 200)}`);
      res.off('close', onClose);
      return rpcError(res, 502, 'MCP upstream refused the proxy credentials', idOf(body));
    }
    if (upstream.status === 403) {
      // The controller would not act as this caller (RBAC does not let the proxy impersonate them).
      const message = upstreamMessage(await upstream.text().catch(() => ''));
      o.logger.warn(`controller MCP refused to act as ${who} (403): ${message}`);
      res.off('close', onClose);
      return rpcError(res, 403, message || 'forbidden', idOf(body));
    }
    const sid = upstream.headers.get('mcp-session-id');
    if (sid)
      // An evicted session is ended upstream too (DELETE as its owner), so that it is gone there as
      // well once the proxy no longer remembers it was evicted.
      owners.add(sid, who, () => {
        fetch(o.mcpUrl as string, {
          method: 'DELETE',
          headers: {
            authorization: headers.authorization,
            ...actorHeaders(actor),
            'mcp-session-id': sid,
            ...(headers['mcp-protocol-version'] ? { 'mcp-protocol-version': headers['mcp-protocol-version'] } : {}),
          },
          signal: AbortSignal.timeout(10_000),
        })
          .then((r) => r.body?.cancel())
          .catch((e: Error) => o.logger.warn(`MCP upstream: ending evicted session failed: ${e.message}`));
      });
    if (req.method === 'DELETE' && typeof session === 'string' && upstream.ok) owners.remove(session);
    res.status(upstream.status);
    for (const h of FORWARD_RESPONSE) {
      const v = upstream.headers.get(h);
      if (v) res.setHeader(h, v);
    }
    // no-transform keeps the compression middleware from buffering SSE.
    res.setHeader('cache-control', `${upstream.headers.get('cache-control') ?? 'no-cache'}, no-transform`);
    res.flushHeaders();
    if (!upstream.body) {
      res.end();
      return;
    }
    try {
      const reader = upstream.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        res.write(value);
        (res as unknown as { flush?: () => void }).flush?.();
      }
      res.end();
    } catch (e) {
      if (!ac.signal.aborted) o.logger.warn(`MCP upstream stream failed: ${(e as Error).message}`);
      res.destroy();
    } finally {
      res.off('close', onClose);
    }
  };
}
