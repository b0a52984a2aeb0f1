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
}) {
  const owners = new Map<string, string>();
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
    if (typeof session === 'string' && owners.has(session) && owners.get(session) !== who)
      return rpcError(res, 403, 'this MCP session belongs to another principal');

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
    if (sid && !owners.has(sid)) owners.set(sid, who);
    if (req.method === 'DELETE' && typeof session === 'string' && upstream.ok) owners.delete(session);
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
