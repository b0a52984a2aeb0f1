import express, { type NextFunction, type Request, type Response } from 'express';
import { authenticateHttp, floodGate, type HttpAuthDeps, HttpAuthFailure, refusalHeaders } from '../auth/httpAuth.js';
import type { Logger } from '../observability/logger.js';
import { SampledLog } from '../observability/sampledLog.js';
import type { McpConfig } from './config.js';
import { authInfoFor } from './guard.js';
import { type AuthedRequest, idOf, rpcError } from './httpRpc.js';
import { challengeSuffix } from './oauth.js';

// What stands in front of the MCP endpoints, in the order startMcpHttp mounts it.

/** The Host and Origin values the listener answers to, lower-cased (filled in once it has a port). */
export interface AllowedPeers {
  hosts: string[];
  origins: string[];
}

/** The configured hosts, or else the listener's own addresses; origins add the http(s) form of every host. */
export function allowedPeers(cfg: McpConfig, port: number): AllowedPeers {
  const hosts = [
    ...new Set(
      (cfg.allowedHosts.length
        ? cfg.allowedHosts
        : [`${cfg.host}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]
      ).map((h) => h.toLowerCase()),
    ),
  ];
  const origins = [
    ...new Set([
      ...cfg.allowedOrigins.map((o) => o.toLowerCase()),
      ...hosts.flatMap((h) => [`http://${h}`, `https://${h}`]),
    ]),
  ];
  return { hosts, origins };
}

/** DNS-rebinding protection: a Host the listener does not answer to is refused (authenticated or not). */
export const hostGuard = (allowed: AllowedPeers) => (req: Request, res: Response, next: NextFunction) => {
  const host = req.headers.host;
  if (!host || !allowed.hosts.includes(host.toLowerCase()))
    return rpcError(res, 403, `Invalid Host header: ${host ?? '(none)'}`);
  next();
};

/** DNS-rebinding protection of the MCP endpoint: a browser's foreign Origin is refused. */
export const originGuard = (allowed: AllowedPeers) => (req: Request, res: Response, next: NextFunction) => {
  const origin = req.headers.origin;
  if (origin !== undefined && !allowed.origins.includes(origin.toLowerCase()))
    return rpcError(res, 403, `Invalid Origin header: ${origin}`);
  next();
};

/** A body express could not read: 413 or a JSON-RPC parse error, instead of express's HTML page. */
const bodyErrors = (
  err: Error & { type?: string; status?: number },
  _req: Request,
  res: Response,
  next: NextFunction,
) => {
  if (err.type === 'entity.too.large') return rpcError(res, 413, 'request body too large (limit 1mb)');
  if (err.type === 'entity.parse.failed')
    return rpcError(res, 400, 'Parse error: the request body is not valid JSON', -32700);
  next(err);
};

type Refuse = (req: AuthedRequest, res: Response, e: HttpAuthFailure) => void;

/**
 * The flood gate, the body and authentication, in this order: the body is read so that every error
 * answer can carry the request id — but not for an address that already sent too many unknown
 * tokens: 429 before reading anything (the JSON-RPC id is null). Then bearer authentication and
 * impersonation, shared with the JSON API.
 */
export function bodyAndAuth(cfg: McpConfig, auth: HttpAuthDeps, log: Logger) {
  const refusals = auth.refusals ?? new SampledLog(log, { lines: 10, intervalMs: 10_000, what: 'requests refused' });
  const refuse: Refuse = (req, res, e) => {
    res.set(refusalHeaders(e, 'kpromo-mcp', !!req.headers.authorization));
    if (e.status === 401)
      res.setHeader(
        'WWW-Authenticate',
        `${res.getHeader('WWW-Authenticate')}${challengeSuffix(cfg, req.headers.host)}`,
      );
    rpcError(res, e.status, e.message, e.status === 503 ? -32603 : -32000, idOf(req.body));
  };
  const flood = (req: AuthedRequest, res: Response, next: NextFunction) => {
    const limited = floodGate(auth, req.headers, req.socket.remoteAddress);
    if (!limited) return next();
    refusals.warn({ audit: true, status: 429, source: req.socket.remoteAddress, result: 'refused' }, limited.message);
    refuse(req, res, limited);
  };
  return [flood, express.json({ limit: '1mb' }), bodyErrors, authenticate(auth, log, refusals, refuse)];
}

/** Sets req.caller (and the SDK's req.auth), or refuses with an audit line. */
function authenticate(auth: HttpAuthDeps, log: Logger, refusals: SampledLog, refuse: Refuse) {
  return async (req: AuthedRequest, res: Response, next: NextFunction) => {
    try {
      const caller = await authenticateHttp(auth, req.headers, req.socket.remoteAddress);
      req.caller = caller;
      req.auth = authInfoFor(caller);
      next();
    } catch (e) {
      if (!(e instanceof HttpAuthFailure)) return next(e);
      // Refusals a stranger can cause are logged sampled; those of an authenticated caller always.
      if (!e.authenticated)
        refusals.warn(
          {
            audit: true,
            status: e.status,
            source: req.socket.remoteAddress,
            result: 'refused',
            ...(e.detail ? { err: e.detail } : {}),
          },
          e.message,
        );
      if (e.status === 403)
        log.warn(
          {
            audit: true,
            user: e.authenticated?.username,
            authSource: e.authenticated?.source,
            impersonate: req.headers['x-kpromo-user'],
            impersonateGroups: req.headers['x-kpromo-groups'],
            result: 'refused',
            message: e.message,
          },
          'mcp impersonation refused',
        );
      if (e.status === 503 && e.authenticated) log.error({ err: e.detail ?? e.message }, 'authorization failed');
      refuse(req, res, e);
    }
  };
}
