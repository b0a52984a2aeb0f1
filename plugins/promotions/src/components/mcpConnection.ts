import type { ToolInfo } from './assistantSchema';

export interface ToolResult {
  content?: Array<{ type: string; text?: string; [k: string]: unknown }>;
  structuredContent?: unknown;
  isError?: boolean;
}

/** What the Assistant needs from an MCP session. */
export interface McpConnection {
  listTools(): Promise<ToolInfo[]>;
  callTool(name: string, args: Record<string, unknown>): Promise<ToolResult>;
  close(): Promise<void>;
}

type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * Opens an MCP session over Streamable HTTP to the promotions backend's MCP proxy. `fetch` is Backstage's
 * fetchApi.fetch, so every request (and the SSE stream) carries the user's Backstage token.
 */
export async function connectMcp(url: string, fetch: FetchLike): Promise<McpConnection> {
  // Loaded on first use: the assistant panel is the only part of the plugin that speaks MCP.
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const client = new Client({ name: 'backstage-promotions-assistant', version: '0.1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url, globalThis.location?.href), {
    fetch: (u, init) => fetch(u, init),
  });
  await client.connect(transport);
  return fromClient(client);
}

/** Wraps a connected SDK Client (also used by tests with an in-memory transport). */
export function fromClient(client: {
  listTools: (p?: { cursor?: string }) => Promise<{ tools: unknown[]; nextCursor?: string }>;
  callTool: (p: { name: string; arguments?: Record<string, unknown> }) => Promise<unknown>;
  close: () => Promise<void>;
}): McpConnection {
  return {
    async listTools() {
      const tools: ToolInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined);
        tools.push(...(page.tools as ToolInfo[]));
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    },
    async callTool(name, args) {
      return (await client.callTool({ name, arguments: args })) as ToolResult;
    },
    close: () => client.close(),
  };
}
