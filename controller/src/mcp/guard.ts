import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { ApiError } from '../api/context.js';
import type { AccessRequest, Authorizer } from '../auth/authorizer.js';
import type { Caller } from '../auth/identity.js';
import { KubeError } from '../kube/rest.js';
import type { Logger } from '../observability/logger.js';
import { redactDeep } from './redact.js';

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface McpServerOptions {
  /** Write mode: promote, rollback and plan creation. Off unless explicitly enabled. */
  write: boolean;
  authorizer: Pick<Authorizer, 'check'>;
  log: Logger;
  /** The caller when the transport carries no identity (stdio: the kubeconfig user). */
  localCaller?: Caller;
  defaultPageSize?: number;
}

/** A call the server declines: read-only mode, RBAC, no confirmation. Logged as `refused`. */
export class Refused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Refused';
  }
}

/** A bad request the tool detected itself (beyond schema validation). */
export class BadRequest extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BadRequest';
  }
}

export function callerOf(extra: Extra, o: McpServerOptions): Caller {
  const c = (extra.authInfo?.extra as { caller?: Caller } | undefined)?.caller ?? o.localCaller;
  if (!c) throw new Refused('unauthenticated: no caller identity on this connection');
  return c;
}

export async function authorize(o: McpServerOptions, caller: Caller, reqs: AccessRequest[]): Promise<void> {
  for (const r of reqs) {
    const d = await o.authorizer.check(caller, r);
    if (!d.allowed)
      throw new Refused(
        `forbidden: ${caller.username}${caller.via ? ` (via ${caller.via.username})` : ''} may not ${r.verb} ${r.resource}${r.namespace ? ` in namespace ${r.namespace}` : ''} (Kubernetes RBAC)`,
      );
  }
}

/** A message safe to show a client: no stack traces, no internals beyond the error text. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError || e instanceof Refused || e instanceof BadRequest) return e.message;
  if (e instanceof KubeError) return `Kubernetes API error (${e.status}): ${e.message.split('\n')[0]}`;
  if (e instanceof Error) return e.message.split('\n')[0];
  return String(e);
}

export interface ToolResult {
  [k: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/**
 * Runs one tool call: identity, write-mode gate, RBAC, the call, and one audit line whatever happens.
 * The structured result is also serialised as JSON text for clients without structured output.
 */
export async function runTool(
  o: McpServerOptions,
  tool: string,
  args: Record<string, unknown>,
  extra: Extra,
  gate: { write?: boolean; access: (caller: Caller) => AccessRequest[] },
  fn: (caller: Caller) => Promise<Record<string, unknown>>,
): Promise<ToolResult> {
  const t0 = Date.now();
  let caller: Caller | undefined;
  let result: 'ok' | 'error' | 'refused' = 'ok';
  let message: string | undefined;
  try {
    caller = callerOf(extra, o);
    if (gate.write && !o.write)
      throw new Refused(`${tool} is refused: the MCP server runs in read-only mode (enable mcp.write to allow it)`);
    await authorize(o, caller, gate.access(caller));
    const out = await fn(caller);
    return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
  } catch (e) {
    result =
      e instanceof Refused || (e instanceof ApiError && (e.status === 401 || e.status === 403)) ? 'refused' : 'error';
    message = errorText(e);
    return { content: [{ type: 'text', text: message }], isError: true };
  } finally {
    o.log.info(
      {
        audit: true,
        user: caller?.username,
        groups: caller?.groups,
        authSource: caller?.via?.source ?? caller?.source,
        ...(caller?.via ? { via: caller.via.username, impersonated: true } : {}),
        session: extra.sessionId,
        tool,
        args: redactDeep(args),
        result,
        ...(message ? { message } : {}),
        ms: Date.now() - t0,
      },
      'mcp tool call',
    );
  }
}
