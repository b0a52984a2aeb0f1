import type { AuthInfo } from '@modelcontextprotocol/server';
import type { Request, Response } from 'express';
import type { Caller } from '../auth/identity.js';

/** A request past authentication: the SDK reads `auth`, the endpoints read `caller`. */
export type AuthedRequest = Request & { auth?: AuthInfo; caller?: Caller };

/** Who holds a session or listen stream: the user, and the proxy when it came through impersonation. */
export const identityOf = (c: Caller) => JSON.stringify([c.username, c.via?.username ?? null]);

type RpcId = string | number | null;

/** The JSON-RPC id of a single request body, for error answers; null when none can be read. */
export function idOf(body: unknown): RpcId {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const { id, method } = body as { id?: unknown; method?: unknown };
  return typeof method === 'string' && (typeof id === 'string' || typeof id === 'number') ? id : null;
}

export const rpcError = (res: Response, status: number, message: string, code = -32000, id: RpcId = null) => {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id });
};
