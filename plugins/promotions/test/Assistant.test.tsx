// @vitest-environment jsdom

import { fetchApiRef } from '@backstage/frontend-plugin-api';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { AssistantPanel, ToolForm } from '../src/components/AssistantPanel';
import { isDestructive, schemaToFields, type ToolInfo, toArguments } from '../src/components/assistantSchema';
import { fromClient } from '../src/components/mcpConnection';
import { fakeApi } from './fixtures';
import { renderWith } from './render';

afterEach(cleanup);

const listTool: ToolInfo = {
  name: 'list',
  title: 'List applications',
  description: 'Lists kpromo Applications',
  inputSchema: {
    type: 'object',
    properties: { name: { type: 'string', description: 'Name glob' }, pageSize: { type: 'integer' } },
  },
  annotations: { readOnlyHint: true, destructiveHint: false },
};
const promoteTool: ToolInfo = {
  name: 'promote',
  title: 'Approve a PromotionPlan (promote)',
  inputSchema: {
    type: 'object',
    properties: { namespace: { type: 'string' }, plan: { type: 'string', description: 'Plan name' } },
    required: ['plan'],
  },
  annotations: { readOnlyHint: false, destructiveHint: true },
};

/** A real MCP server (SDK) over an in-memory transport; records the calls it receives. */
async function mcpServer() {
  const calls: Array<{ name: string; args: unknown }> = [];
  const server = new Server({ name: 'fake-kpromo', version: '0.0.1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [listTool, promoteTool] as never }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    calls.push({ name: req.params.name, args: req.params.arguments });
    if (req.params.name === 'list')
      return {
        content: [{ type: 'text', text: '1 application' }],
        structuredContent: { total: 1, applications: [{ name: 'checkout', owner: 'payments' }] },
      };
    return {
      content: [{ type: 'text', text: 'approved' }],
      structuredContent: { plan: { name: 'p1', approved: true } },
    };
  });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  const client = new Client({ name: 'test', version: '0' });
  await client.connect(b);
  return { connection: fromClient(client), calls };
}

describe('assistant schema helpers', () => {
  it('generates fields from a tool input schema and coerces values', () => {
    const fields = schemaToFields({
      type: 'object',
      properties: {
        kind: { type: 'string', enum: ['applications', 'plans'] },
        from: { type: 'string' },
        pageSize: { type: 'integer' },
        dryRun: { type: 'boolean', default: false },
        teams: { type: 'array', items: { type: 'string' } },
        matchLabels: { type: 'object' },
      },
      required: ['kind', 'from', 'dryRun'],
    });
    expect(fields.map((f) => [f.name, f.kind, f.required])).toEqual([
      ['kind', 'enum', true],
      ['from', 'text', true],
      ['pageSize', 'number', false],
      ['dryRun', 'boolean', false],
      ['teams', 'list', false],
      ['matchLabels', 'json', false],
    ]);
    expect(
      toArguments(fields, { kind: 'plans', from: 'dev', pageSize: '20', teams: 'a, b', matchLabels: '{"x":"y"}' }),
    ).toEqual({ kind: 'plans', from: 'dev', pageSize: 20, teams: ['a', 'b'], matchLabels: { x: 'y' } });
    expect(() => toArguments(fields, { kind: 'plans' })).toThrow('from is required');
    expect(() => toArguments(fields, { kind: 'plans', from: 'dev', pageSize: 'many' })).toThrow('must be a number');
  });

  it('treats tools as destructive unless read-only or destructiveHint: false (MCP defaults)', () => {
    expect(isDestructive(listTool)).toBe(false);
    expect(isDestructive(promoteTool)).toBe(true);
    expect(isDestructive({})).toBe(true);
    expect(isDestructive({ annotations: { readOnlyHint: false, destructiveHint: false } })).toBe(false);
  });
});

describe('AssistantPanel', () => {
  it('lists the MCP tools, renders a form from the input schema and shows structured results', async () => {
    const { connection, calls } = await mcpServer();
    renderWith(<AssistantPanel connect={async () => connection} />, { api: fakeApi() });
    expect(await screen.findByText('Assistant · 2 tools')).toBeTruthy();
    const form = screen.getByTestId('tool-form-list');
    fireEvent.change(within(form).getByLabelText('name'), { target: { value: 'check*' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Run list' }));
    const result = await screen.findByTestId('tool-result');
    expect(calls).toEqual([{ name: 'list', args: { name: 'check*' } }]);
    expect(within(result).getByRole('table').textContent).toContain('checkoutpayments');
    expect(result.textContent).toContain('total');
  });

  it('says what to do when the MCP endpoint is unreachable', async () => {
    renderWith(
      <AssistantPanel
        connect={async () => {
          throw new Error('401 Unauthorized');
        }}
      />,
      { api: fakeApi() },
    );
    expect(await screen.findByText('Could not reach the MCP server')).toBeTruthy();
    expect(screen.getByText('401 Unauthorized')).toBeTruthy();
  });
});

describe('ToolForm', () => {
  it('asks for confirmation before running a destructive tool, and runs only on confirm', async () => {
    const runs: unknown[] = [];
    renderWith(<ToolForm tool={promoteTool} onRun={async (a) => void runs.push(a)} />, { api: fakeApi() });
    const run = screen.getByRole('button', { name: 'Run promote' });
    fireEvent.click(run);
    expect(screen.getByText('plan is required')).toBeTruthy();
    fireEvent.change(screen.getByLabelText('plan *'), { target: { value: 'shop-prod-1' } });
    fireEvent.click(run);
    const dialog = await screen.findByRole('dialog');
    expect(JSON.parse(within(dialog).getByTestId('confirm-args').textContent ?? '')).toEqual({ plan: 'shop-prod-1' });
    expect(runs).toEqual([]);
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(runs).toEqual([]);
    fireEvent.click(run);
    fireEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Confirm and run' }));
    await waitFor(() => expect(runs).toEqual([{ plan: 'shop-prod-1' }]));
  });

  it('runs a read-only tool without confirmation', async () => {
    const runs: unknown[] = [];
    renderWith(<ToolForm tool={listTool} onRun={async (a) => void runs.push(a)} />, { api: fakeApi() });
    fireEvent.click(screen.getByRole('button', { name: 'Run list' }));
    await waitFor(() => expect(runs).toEqual([{}]));
    expect(screen.queryByRole('dialog')).toBeNull();
  });
});

describe('AssistantPanel chat', () => {
  it("lets the model call tools; read-only ones run, destructive ones wait for the user's click", async () => {
    const { connection, calls } = await mcpServer();
    const requests: Array<{ messages: Array<{ role: string; content?: string }>; tools: unknown[] }> = [];
    // An OpenAI-compatible endpoint (external to kpromo): first asks for list + promote, then answers.
    const fetch = async (url: string, init?: RequestInit) => {
      expect(url).toBe('http://llm.test/v1/chat/completions');
      const body = JSON.parse(String(init?.body));
      requests.push(body);
      const message =
        requests.length === 1
          ? {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'c1', type: 'function', function: { name: 'list', arguments: '{"name":"check*"}' } },
                { id: 'c2', type: 'function', function: { name: 'promote', arguments: '{"plan":"shop-prod-1"}' } },
              ],
            }
          : { role: 'assistant', content: 'Promoted shop-prod-1.' };
      return new Response(JSON.stringify({ choices: [{ message }] }), { status: 200 });
    };
    renderWith(<AssistantPanel connect={async () => connection} />, {
      api: fakeApi(),
      config: { promotions: { assistant: { chatEndpoint: 'http://llm.test/v1', model: 'test-model' } } },
      apis: [[fetchApiRef, { fetch }]],
    });
    fireEvent.change(await screen.findByLabelText('Ask'), { target: { value: 'promote the prod plan' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send' }));

    const dialog = await screen.findByRole('dialog');
    expect(JSON.parse(within(dialog).getByTestId('confirm-args').textContent ?? '')).toEqual({ plan: 'shop-prod-1' });
    expect(calls).toEqual([{ name: 'list', args: { name: 'check*' } }]); // read-only ran, promote waits
    expect(requests[0].tools.length).toBe(2);
    expect(requests[0].messages.at(-1)).toEqual({ role: 'user', content: 'promote the prod plan' });

    fireEvent.click(within(dialog).getByRole('button', { name: 'Confirm and run' }));
    expect(await screen.findByText(/Promoted shop-prod-1\./)).toBeTruthy();
    expect(calls.map((c) => c.name)).toEqual(['list', 'promote']);
    // the model got both tool results back, in order
    expect(requests[1].messages.filter((m) => m.role === 'tool').length).toBe(2);
  });

  it('tells the model when the user rejects a destructive call, and does not run it', async () => {
    const { connection, calls } = await mcpServer();
    const requests: Array<{ messages: Array<{ role: string; content?: string }> }> = [];
    const fetch = async (_url: string, init?: RequestInit) => {
      requests.push(JSON.parse(String(init?.body)));
      const message =
        requests.length === 1
          ? {
              role: 'assistant',
              content: 'I will promote it.',
              tool_calls: [{ id: 'c1', type: 'function', function: { name: 'promote', arguments: '{"plan":"p9"}' } }],
            }
          : { role: 'assistant', content: 'OK, not promoted.' };
      return new Response(JSON.stringify({ choices: [{ message }] }), { status: 200 });
    };
    renderWith(<AssistantPanel connect={async () => connection} />, {
      api: fakeApi(),
      config: { promotions: { assistant: { chatEndpoint: 'http://llm.test/v1' } } },
      apis: [[fetchApiRef, { fetch }]],
    });
    fireEvent.change(await screen.findByLabelText('Ask'), { target: { value: 'promote p9' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send' }));
    fireEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Cancel' }));
    expect(await screen.findByText(/OK, not promoted\./)).toBeTruthy();
    expect(calls).toEqual([]);
    expect(requests[1].messages.at(-1)).toMatchObject({ role: 'tool', content: 'The user rejected this call.' });
    expect(screen.getByTestId('chat-log').textContent).toContain('(rejected by you)');
  });
});
