// Clients of a controller's MCP endpoint (Streamable HTTP), for tests and benchmarks.
import { request as httpRequest } from 'node:http';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernHttpTransport,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export interface ToolOut {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
}

export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolOut> {
  return (await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000 })) as ToolOut;
}

export const text = (r: ToolOut) => r.content.map((c) => c.text ?? '').join('\n');

/** Structured result of a successful call; fails loudly with the tool's message otherwise. */
export function ok<T = Record<string, unknown>>(r: ToolOut): T {
  if (r.isError) throw new Error(`tool error: ${text(r)}`);
  return r.structuredContent as T;
}

export async function httpClient(
  url: string,
  token: string,
  opts: { elicit?: 'accept' | 'decline'; name?: string; headers?: Record<string, string> } = {},
): Promise<Client> {
  const client = new Client(
    { name: opts.name ?? 'mcp-test', version: '1.0.0' },
    { capabilities: opts.elicit ? { elicitation: { form: {} } } : {} },
  );
  if (opts.elicit) {
    const action = opts.elicit;
    client.setRequestHandler(ElicitRequestSchema, async () =>
      action === 'accept' ? { action: 'accept', content: { confirm: true } } : { action: 'decline' },
    );
  }
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}`, ...opts.headers } },
    }),
  );
  return client;
}

/**
 * A client of the current SDK pinned to protocol 2026-07-28 (stateless, per-request _meta; no
 * fallback to the 2025 handshake), optionally answering input_required confirmations.
 */
export async function modernClient(
  url: string,
  token: string,
  opts: { elicit?: 'accept' | 'decline'; headers?: Record<string, string> } = {},
): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'mcp-test-modern', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      capabilities: opts.elicit ? { elicitation: { form: {} } } : {},
    },
  );
  if (opts.elicit) {
    const action = opts.elicit;
    client.setRequestHandler('elicitation/create', async () =>
      action === 'accept' ? { action: 'accept', content: { confirm: true } } : { action: 'decline' },
    );
  }
  await client.connect(
    new ModernHttpTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}`, ...opts.headers } },
    }),
  );
  return client;
}

/** Raw HTTP (node:http lets tests set Host and Origin freely). */
export function rawPost(
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        let data = '';
        res.on('data', (c) => {
          data += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: data }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

export const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
