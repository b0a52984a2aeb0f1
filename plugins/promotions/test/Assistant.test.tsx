// @vitest-environment jsdom

import type { AssistantEvent, ChatMessage, ChatRequestBody } from '@kpromo/plugin-promotions-common';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/server';
import { cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { AssistantPanel, ToolForm } from '../src/components/AssistantPanel';
import { isDestructive, schemaToFields, type ToolInfo, toArguments } from '../src/components/assistantSchema';
import { type AssistantClient, applyEvent, type ChatEntry, NdjsonDecoder } from '../src/components/chat';
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
  server.setRequestHandler('tools/list', async () => ({ tools: [listTool, promoteTool] as never }));
  server.setRequestHandler('tools/call', async (req) => {
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

/** A backend without promotions.assistant.llm. */
const noChat: AssistantClient = { status: async () => ({ enabled: false }), chat: async () => undefined };

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
    renderWith(<AssistantPanel connect={async () => connection} chat={noChat} />, { api: fakeApi() });
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
        chat={noChat}
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
  /**
   * The backend's chat route as the panel sees it: each request gets the NDJSON events the test
   * scripts (the real route, model and tools run in plugins/promotions-backend/test/assistant.int.test.ts).
   */
  function scriptedBackend(script: AssistantEvent[][]) {
    const requests: ChatRequestBody[] = [];
    const client: AssistantClient = {
      status: async () => ({ enabled: true, model: 'test-model', maxToolRounds: 5 }),
      chat: async (body, onEvent) => {
        requests.push(body);
        for (const e of script.shift() ?? []) onEvent(e);
      },
    };
    return { client, requests };
  }

  const asked: ChatMessage[] = [{ role: 'user', content: 'promote the shop release to stable' }];
  const waiting: ChatMessage[] = [
    ...asked,
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'plan', arguments: '{"from":"dev","to":"stable"}' } },
      ],
    },
  ];
  const pending: AssistantEvent = {
    type: 'pending',
    id: 'c1',
    name: 'plan',
    title: 'Create a PromotionPlan',
    arguments: { from: 'dev', to: 'stable' },
    safety: 'write',
    token: 'tok-1',
    expiresAt: '2030-01-01T00:00:00Z',
  };

  it('streams the answer and shows a card per tool call with its arguments and result', async () => {
    const { connection } = await mcpServer();
    const { client, requests } = scriptedBackend([
      [
        { type: 'tool_call', id: 'c0', name: 'state', arguments: { application: 'checkout' }, safety: 'read' },
        {
          type: 'tool_result',
          id: 'c0',
          name: 'state',
          isError: false,
          summary: 'checkout: prod v1.0.0',
          structuredContent: { name: 'checkout', prod: 'v1.0.0' },
        },
        { type: 'text', delta: 'checkout runs ' },
        { type: 'text', delta: 'v1.0.0 in prod.' },
        { type: 'done', reason: 'answered', messages: [] },
      ],
    ]);
    renderWith(<AssistantPanel connect={async () => connection} chat={client} />, { api: fakeApi() });
    fireEvent.change(await screen.findByLabelText('Ask'), {
      target: { value: 'what version of checkout runs in prod?' },
    });
    fireEvent.click(screen.getByRole('button', { name: 'Send' }));
    expect((await screen.findByTestId('assistant-answer')).textContent).toBe(
      'Assistant: checkout runs v1.0.0 in prod.',
    );
    const card = screen.getByTestId('tool-call');
    expect(card.textContent).toContain('tool state');
    expect(JSON.parse(within(card).getByTestId('tool-call-args').textContent ?? '')).toEqual({
      application: 'checkout',
    });
    expect(within(card).getByTestId('tool-call-result').textContent).toContain('v1.0.0');
    expect(requests).toEqual([{ messages: [{ role: 'user', content: 'what version of checkout runs in prod?' }] }]);
  });

  it('runs a call that changes something only after the click, sending back the token the backend issued', async () => {
    const { connection } = await mcpServer();
    const { client, requests } = scriptedBackend([
      [pending, { type: 'done', reason: 'pending', messages: waiting }],
      [
        { type: 'tool_call', id: 'c1', name: 'plan', arguments: { from: 'dev', to: 'stable' }, safety: 'write' },
        { type: 'tool_result', id: 'c1', name: 'plan', isError: false, summary: 'Created PromotionPlan shop/p1' },
        { type: 'text', delta: 'Created plan p1.' },
        { type: 'done', reason: 'answered', messages: [] },
      ],
    ]);
    renderWith(<AssistantPanel connect={async () => connection} chat={client} />, { api: fakeApi() });
    fireEvent.change(await screen.findByLabelText('Ask'), { target: { value: 'promote the shop release to stable' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send' }));
    const card = await screen.findByTestId('pending-call');
    expect(JSON.parse(within(card).getByTestId('confirm-args').textContent ?? '')).toEqual({
      from: 'dev',
      to: 'stable',
    });
    expect(card.textContent).toContain('Nothing has run yet');
    expect(requests).toHaveLength(1);
    fireEvent.click(within(card).getByRole('button', { name: 'Confirm and run' }));
    expect(await screen.findByText(/Created plan p1\./)).toBeTruthy();
    expect(requests[1]).toEqual({ messages: waiting, confirm: { id: 'c1', token: 'tok-1', approve: true } });
    expect(screen.getByTestId('pending-call').textContent).toContain('Confirmed by you.');
    expect(screen.getByTestId('tool-call').textContent).toContain('done');
  });

  it('declines: the backend is told, with the same token, not to run the call', async () => {
    const { connection } = await mcpServer();
    const { client, requests } = scriptedBackend([
      [pending, { type: 'done', reason: 'pending', messages: waiting }],
      [
        { type: 'tool_result', id: 'c1', name: 'plan', isError: false, summary: 'declined by the user' },
        { type: 'text', delta: 'OK, nothing changed.' },
        { type: 'done', reason: 'answered', messages: [] },
      ],
    ]);
    renderWith(<AssistantPanel connect={async () => connection} chat={client} />, { api: fakeApi() });
    fireEvent.change(await screen.findByLabelText('Ask'), { target: { value: 'promote the shop release to stable' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send' }));
    fireEvent.click(within(await screen.findByTestId('pending-call')).getByRole('button', { name: 'Decline' }));
    expect(await screen.findByText(/OK, nothing changed\./)).toBeTruthy();
    expect(requests[1].confirm).toEqual({ id: 'c1', token: 'tok-1', approve: false });
    expect(screen.getByTestId('pending-call').textContent).toContain('Declined by you.');
    expect(screen.queryByTestId('tool-call')).toBeNull();
  });

  it("shows the backend's error about the model endpoint", async () => {
    const { connection } = await mcpServer();
    const { client } = scriptedBackend([
      [{ type: 'error', code: 'model_unauthorized', message: 'the model endpoint refused the key (401)' }],
    ]);
    renderWith(<AssistantPanel connect={async () => connection} chat={client} />, { api: fakeApi() });
    fireEvent.change(await screen.findByLabelText('Ask'), { target: { value: 'hi' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send' }));
    expect(await screen.findByText('the model endpoint refused the key (401)')).toBeTruthy();
  });

  it('offers tool forms only, and says how to enable chat, when the backend has no model', async () => {
    const { connection } = await mcpServer();
    const client: AssistantClient = { status: async () => ({ enabled: false }), chat: async () => undefined };
    renderWith(<AssistantPanel connect={async () => connection} chat={client} />, {
      api: fakeApi(),
      config: {
        backend: { baseUrl: 'http://localhost:7007' },
        promotions: { assistant: { chatEndpoint: 'http://llm.test/v1' } },
      },
    });
    expect(await screen.findByText(/Configure promotions.assistant.llm on the backend/)).toBeTruthy();
    expect(screen.getByText('promotions.assistant.chatEndpoint is no longer used')).toBeTruthy();
    expect(screen.getByTestId('tool-form-list')).toBeTruthy();
    expect(screen.queryByLabelText('Ask')).toBeNull();
  });
});

describe('chat log', () => {
  it('decodes NDJSON split anywhere, also inside a multi-byte character', () => {
    const d = new NdjsonDecoder();
    const bytes = new TextEncoder().encode('{"type":"text","delta":"→ v1"}\n{"type":"done"');
    expect(d.push(bytes.slice(0, 26))).toEqual([]);
    expect(d.push(bytes.slice(26))).toEqual([{ type: 'text', delta: '→ v1' }]);
    expect(d.push(new TextEncoder().encode(',"reason":"answered","messages":[]}'))).toEqual([]);
    expect(d.end()).toEqual([{ type: 'done', reason: 'answered', messages: [] }]);
  });

  it('appends streamed text to the answer and fills results into their card', () => {
    let log: ChatEntry[] = [{ kind: 'user', text: 'q' }];
    log = applyEvent(log, { type: 'text', delta: 'a' });
    log = applyEvent(log, { type: 'text', delta: 'b' });
    log = applyEvent(log, { type: 'tool_call', id: 'x', name: 'list', arguments: {}, safety: 'read' });
    log = applyEvent(log, { type: 'tool_result', id: 'x', name: 'list', isError: true, summary: 'denied' });
    expect(log).toEqual([
      { kind: 'user', text: 'q' },
      { kind: 'assistant', text: 'ab' },
      { kind: 'tool', id: 'x', name: 'list', args: {}, safety: 'read', state: 'failed', summary: 'denied' },
    ]);
  });
});
