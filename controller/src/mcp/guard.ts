import { STATUS_META } from '@kpromo/plan-card';
import type { AuthInfo, CallToolResult, InputRequiredResult, ServerContext } from '@modelcontextprotocol/server';
import { isInputRequiredResult } from '@modelcontextprotocol/server';
import { ApiError } from '../api/context.js';
import type { Caller } from '../auth/identity.js';
import { KubeError } from '../kube/rest.js';
import type { Logger } from '../observability/logger.js';
import { redactDeep } from './redact.js';

export type Extra = ServerContext;

/** Authorisation is the API context's (ctx.access): every check is made as the caller there. */
export interface McpServerOptions {
  /** Write mode: promote, rollback and plan creation. Off unless explicitly enabled. */
  write: boolean;
  log: Logger;
  /** The caller when the transport carries no identity (stdio: the kubeconfig user). */
  localCaller?: Caller;
}

/** The AuthInfo the HTTP door attaches to every authenticated request (the SDK passes it through). */
export function authInfoFor(caller: Caller): AuthInfo {
  return { token: '', clientId: (caller.via ?? caller).username, scopes: [], extra: { caller } };
}

export function callerOf(extra: Extra, o: McpServerOptions): Caller {
  const c = (extra.http?.authInfo?.extra as { caller?: Caller } | undefined)?.caller ?? o.localCaller;
  if (!c) throw new ApiError(401, 'unauthenticated: no caller identity on this connection');
  return c;
}

/**
 * A message safe to show a client: no stack traces, no internals beyond the error text. Refusals
 * and bad requests are the api layer's ApiError (401/403, 400), as at every other door.
 */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof KubeError) return `Kubernetes API error (${e.status}): ${e.message.split('\n')[0]}`;
  if (e instanceof Error) return e.message.split('\n')[0];
  return String(e);
}

/** A tool's answer: the data (structuredContent) and a short human summary (the text content). */
export interface ToolOutcome {
  data: Record<string, unknown>;
  text: string;
}

/** Rejects when the request is cancelled: the caller stops waiting (work already sent is not undone). */
export function untilCancelled<T>(signal: AbortSignal, work: Promise<T>): Promise<T> {
  if (signal.aborted) return Promise.reject(new Cancelled());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

export class Cancelled extends Error {
  constructor() {
    super('cancelled by the client');
    this.name = 'Cancelled';
  }
}

/**
 * Runs one tool call: identity, write-mode gate, the call (abandoned when the client cancels; it
 * authorises itself through the API layer), and one audit line whatever happens. Text content is a
 * short summary; structuredContent carries the data. A call may instead ask the client for input
 * (confirmation), returned as is.
 */
export async function runTool(
  o: McpServerOptions,
  tool: string,
  args: Record<string, unknown>,
  extra: Extra,
  write: boolean,
  fn: (caller: Caller) => Promise<ToolOutcome | InputRequiredResult>,
): Promise<CallToolResult | InputRequiredResult> {
  const t0 = Date.now();
  let caller: Caller | undefined;
  let result: 'ok' | 'error' | 'refused' | 'input_required' | 'cancelled' = 'ok';
  let message: string | undefined;
  try {
    caller = callerOf(extra, o);
    if (write && !o.write)
      throw new ApiError(
        403,
        `${tool} is refused: the MCP server runs in read-only mode (enable mcp.write to allow it)`,
      );
    const out = await untilCancelled(extra.mcpReq.signal, fn(caller));
    if (isInputRequiredResult(out)) {
      result = 'input_required';
      return out;
    }
    return { content: [{ type: 'text', text: out.text }], structuredContent: out.data };
  } catch (e) {
    result =
      e instanceof Cancelled
        ? 'cancelled'
        : e instanceof ApiError && (e.status === 401 || e.status === 403)
          ? 'refused'
          : 'error';
    message = errorText(e);
    // The operation's status (409: the plan changed since it was shown) for views that say which refusal it was.
    const status = e instanceof ApiError ? { _meta: { [STATUS_META]: e.status } } : {};
    return { content: [{ type: 'text', text: message }], isError: true, ...status };
  } finally {
    o.log.info(
      {
        audit: true,
        user: caller?.username,
        groups: caller?.groups,
        authSource: caller?.via?.source ?? caller?.source,
        ...(caller?.via ? { via: caller.via.username, impersonated: true } : {}),
        ...(caller?.agent ? { agent: caller.agent.name } : {}),
        ...(extra.sessionId ? { session: extra.sessionId } : {}),
        requestId: extra.mcpReq.id,
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
