import { type Actor, actorHeaders } from '@kpromo/plugin-promotions-node';
import type { McpTool, ToolResult } from './toolLoop.js';

/** The controller's MCP tools, as one caller sees and may call them. */
export interface CallerTools {
  tools: McpTool[];
  call(name: string, args: Record<string, unknown>): Promise<ToolResult>;
  close(): Promise<void>;
}

/**
 * Opens an MCP session to the controller for `actor`, the way the backend's MCP proxy forwards the
 * browser's sessions (src/mcpProxy.ts): the backend's token (`promotions.controller.token`) plus
 * x-kpromo-user / x-kpromo-groups naming the caller, so the controller lists and authorises every
 * tool as that caller (Kubernetes RBAC through impersonation). No elicitation capability is
 * declared: the user's confirmation of a destructive call is the chat route's own, before the call.
 */
export async function openCallerTools(o: {
  mcpUrl: string;
  token: string;
  actor: Actor;
  signal: AbortSignal;
  /** Only these tools (promotions.assistant.llm.tools); all when unset. */
  only?: string[];
}): Promise<CallerTools> {
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const client = new Client({ name: 'kpromo-portal-assistant', version: '0.1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(o.mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${o.token}`, ...actorHeaders(o.actor) } },
  });
  await client.connect(transport, { signal: o.signal });
  try {
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { signal: o.signal });
      tools.push(...(page.tools as McpTool[]));
      cursor = page.nextCursor;
    } while (cursor);
    const only = o.only ? new Set(o.only) : undefined;
    return {
      tools: only ? tools.filter((t) => only.has(t.name)) : tools,
      call: async (name, args) =>
        (await client.callTool({ name, arguments: args }, { signal: o.signal, timeout: 120_000 })) as ToolResult,
      close: () => client.close(),
    };
  } catch (e) {
    await client.close().catch(() => undefined);
    throw e;
  }
}
