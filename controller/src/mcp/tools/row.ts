import type { PromotionPlan } from '@kpromo/api';
import { registerAppTool } from '@modelcontextprotocol/ext-apps/server';
import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  type McpServer,
  type ToolAnnotations,
} from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { type ApiContext, ApiError } from '../../api/context.js';
import type { Caller } from '../../auth/identity.js';
import { PLAN_CARD_URI } from '../card.js';
import { changeFeed } from '../feed.js';
import { type Extra, type McpServerOptions, runTool, type ToolOutcome } from '../guard.js';
import { followPlan } from '../progress.js';
import { type PlanOut, planOut } from '../views.js';

// A tool is a row: its input (kept in step with the contract's request schema of the same HTTP
// operation), the api/ precheck, the question put to the person, the api/ operation and the shared
// view. registerRow runs every row the same way; authorisation is the api layer's (ctx.access).

export const READ: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};
export const WRITE: ToolAnnotations = { ...READ, readOnlyHint: false, idempotentHint: false };
export const DESTRUCTIVE: ToolAnnotations = { ...WRITE, destructiveHint: true };

/** One call of a tool, as its row sees it. */
export interface Call<A> {
  ctx: ApiContext;
  caller: Caller;
  args: A;
  extra: Extra;
  /** The namespace the call names, else the server's default. */
  ns: string;
}

export interface ToolRow<S extends z.ZodObject, C> {
  name: string;
  title: string;
  description: string;
  input: S;
  output: z.ZodObject;
  annotations: ToolAnnotations;
  /**
   * The contract's request schema of the same HTTP operation: the input uses its field names, and a
   * unit test keeps them in step (fields only MCP has, fields MCP does not offer, each said here).
   */
  contract?: { schema: z.ZodObject; mcpOnly?: readonly string[]; notOffered?: readonly string[] };
  /** Its result holds a plan (structuredContent.plan): MCP Apps hosts show it as the plan card. */
  card?: boolean;
  /** Refused in read-only mode, before anything else. */
  write?: boolean | ((args: z.output<S>) => boolean);
  /** What the api/ operation will check, asked before the person is asked to confirm. */
  check?: (c: Call<z.output<S>>) => Promise<C>;
  /** The question for the person (when the client can elicit), once `check` passed. */
  confirm?: (c: Call<z.output<S>>, checked: C) => string;
  run: (c: Call<z.output<S>>, checked: C) => Promise<ToolOutcome>;
}

export type AnyRow = ToolRow<z.ZodObject, unknown>;

/** A row, typed by its input schema and what its check returns. */
export const row = <S extends z.ZodObject, C = undefined>(r: ToolRow<S, C>): AnyRow => r as unknown as AnyRow;

export function registerRow(server: McpServer, ctx: ApiContext, o: McpServerOptions, r: AnyRow): void {
  const config = {
    title: r.title,
    description: r.description,
    inputSchema: r.input,
    outputSchema: r.output,
    annotations: r.annotations,
  };
  const register = (cb: Parameters<McpServer['registerTool']>[2]) =>
    r.card
      ? registerAppTool(server, r.name, { ...config, _meta: { ui: { resourceUri: PLAN_CARD_URI } } }, cb)
      : server.registerTool(r.name, config, cb);
  register((args: Record<string, unknown>, extra: Extra) => {
    const write = typeof r.write === 'function' ? r.write(args) : !!r.write;
    return runTool(o, r.name, args, extra, write, async (caller) => {
      const c = { ctx, caller, args, extra, ns: (args.namespace as string | undefined) ?? ctx.namespace };
      const checked = await r.check?.(c);
      const ask = r.confirm && confirm(server, extra, r.confirm(c, checked));
      return ask || r.run(c, checked);
    });
  });
}

/**
 * Confirmation by the user, asked only once the action is known to be possible: an
 * `input_required` elicitation on 2026-07-28 (served to 2025 clients by the SDK's shim as an
 * elicitation request) when the client can elicit; without that capability, write mode and RBAC
 * decide alone.
 */
function confirm(server: McpServer, extra: Extra, message: string): InputRequiredResult | undefined {
  const caps =
    ((extra.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
      | ClientCapabilities
      | undefined) ?? server.server.getClientCapabilities();
  if (!caps?.elicitation) return undefined;
  const answer = inputResponse(extra.mcpReq.inputResponses, 'confirm');
  if (answer.kind === 'elicit') {
    if (answer.action === 'accept' && (answer.content as { confirm?: unknown } | undefined)?.confirm === true)
      return undefined;
    throw new ApiError(
      403,
      `not confirmed by the user (${answer.action === 'accept' ? 'confirm was not true' : answer.action})`,
    );
  }
  return inputRequired({
    inputRequests: {
      confirm: inputRequired.elicit({
        message,
        requestedSchema: {
          type: 'object',
          properties: { confirm: { type: 'boolean', title: 'Confirm', description: 'Proceed with this change' } },
          required: ['confirm'],
        },
      }),
    },
  });
}

/** What a write did, to the client's log (level notice); the caller is the one recorded. */
export const notice = (c: Call<unknown>, data: Record<string, unknown>) =>
  c.extra.mcpReq.log('notice', { ...data, by: c.caller.username }, 'kpromo').catch(() => undefined);

/**
 * With a progressToken (and a cache that emits events), follows the plan until it ends, streaming
 * its progress; the view of the plan as last seen and a sentence saying how the following ended.
 */
export async function followed(c: Call<unknown>, p: PromotionPlan): Promise<{ view: PlanOut; text: string }> {
  const feed = changeFeed(c.ctx);
  const f =
    c.extra.mcpReq._meta?.progressToken === undefined || !feed.live
      ? undefined
      : await followPlan(c.ctx, feed, c.extra, p.metadata.namespace ?? '', p.metadata.name, p.metadata.generation);
  return {
    view: planOut(f?.plan ?? p),
    text: !f
      ? 'Follow progress with `state` (or call with a progressToken to have it streamed).'
      : f.end === 'finished'
        ? 'The plan has finished.'
        : f.end === 'waiting'
          ? 'The plan waits for its gate (approvals, freeze window or soak time); follow it with `state`.'
          : 'Stopped following after the time limit; the plan goes on. Follow it with `state`.',
  };
}
