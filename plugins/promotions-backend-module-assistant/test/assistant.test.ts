import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigReader } from '@backstage/config';
import type { AssistantEvent, ChatMessage } from '@kpromo/plugin-promotions-common';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChatRound, createChatClient, type ModelReply } from '../src/assistant/chatClient.js';
import { type LlmConfig, readLlmConfig } from '../src/assistant/config.js';
import { ConfirmationBinder } from '../src/assistant/confirmation.js';
import { closeUnansweredCalls, pendingCall } from '../src/assistant/conversation.js';
import { ChatStreamAssembler, SseDecoder } from '../src/assistant/sse.js';
import { parseTextToolCalls, ToolCallTextFilter } from '../src/assistant/toolCallText.js';
import { type McpTool, runConversation } from '../src/assistant/toolLoop.js';

describe('SSE decoder', () => {
  it('yields the data of complete events across chunk boundaries and line-end styles', () => {
    const d = new SseDecoder();
    expect(d.push('data: {"a":')).toEqual([]);
    expect(d.push('1}\n\n: keep-alive\r\n\r\ndata: x\r')).toEqual(['{"a":1}']);
    // the CR was the first half of a CRLF
    expect(d.push('\ndata: y\r\n\r\nevent: e\nid: 3\ndata:z\n')).toEqual(['x\ny']);
    expect(d.end()).toEqual(['z']);
  });
});

describe('chat stream assembler', () => {
  it('joins text deltas and tool-call deltas by index', () => {
    const a = new ChatStreamAssembler();
    expect(a.apply({ choices: [{ delta: { content: 'Let me ' } }] })).toBe('Let me ');
    a.apply({ choices: [{ delta: { content: 'check.' } }] });
    a.apply({
      choices: [{ delta: { tool_calls: [{ index: 0, id: 'c1', function: { name: 'state', arguments: '{"appl' } }] } }],
    });
    a.apply({ choices: [{ delta: { tool_calls: [{ index: 1, function: { name: 'list', arguments: '{}' } }] } }] });
    a.apply({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'ication":"checkout"}' } }] } }] });
    a.apply({ choices: [{ delta: {}, finish_reason: 'tool_calls' }] });
    expect(a.result()).toEqual({
      content: 'Let me check.',
      finishReason: 'tool_calls',
      toolCalls: [
        { id: 'c1', type: 'function', function: { name: 'state', arguments: '{"application":"checkout"}' } },
        { id: 'call-1', type: 'function', function: { name: 'list', arguments: '{}' } },
      ],
    });
  });
});

describe('tool calls written as text', () => {
  it('parses closed and stop-cut calls, fenced JSON and string arguments', () => {
    expect(
      parseTextToolCalls(
        'Checking.\n<tool_call>{"name": "list", "arguments": {"kind": "applications"}}</tool_call>\n<tool_call>```json\n{"name":"state","parameters":"{\\"application\\":\\"checkout\\"}"}\n```',
      ),
    ).toEqual({
      ok: true,
      text: 'Checking.',
      calls: [
        { name: 'list', arguments: { kind: 'applications' } },
        { name: 'state', arguments: { application: 'checkout' } },
      ],
    });
    expect(parseTextToolCalls('checkout runs v1.0.0 in prod.')).toEqual({
      ok: true,
      text: 'checkout runs v1.0.0 in prod.',
      calls: [],
    });
  });

  it('names what is wrong with a malformed call', () => {
    const r = parseTextToolCalls('<tool_call>{"name": "list", "arguments": {kind: apps}}');
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(/^tool call not valid JSON/);
    expect(!r.ok && r.raw).toBe('{"name": "list", "arguments": {kind: apps}}');
    expect(parseTextToolCalls('<tool_call>{"arguments": {}}</tool_call>')).toMatchObject({
      ok: false,
      error: 'tool call no "name"',
    });
  });

  it('streams text but holds back a tool call, even when its tag is split across deltas', () => {
    const f = new ToolCallTextFilter();
    const out = ['The answer', ' is <', 'tool', '_ca', 'll>{"name":', '"x"}'].map((d) => f.push(d));
    expect(out.join('')).toBe('The answer is ');
    expect(f.end()).toBe('');
    const g = new ToolCallTextFilter();
    expect(g.push('a < b <tool')).toBe('a < b ');
    expect(g.end()).toBe('<tool');
  });
});

describe('confirmation tokens', () => {
  const call = { id: 'c1', name: 'promote', arguments: '{"plan":"p1","namespace":"shop"}' };
  it('accept exactly the call, the user and the time they were issued for, once', () => {
    let now = 1_000_000;
    const b = new ConfirmationBinder(undefined, 60_000, () => now);
    const { token, expiresAt } = b.issue('user:default/alice', call);
    expect(expiresAt.getTime()).toBe(1_060_000);
    expect(b.redeem('user:default/mallory', call, token)).toMatchObject({ ok: false });
    expect(
      b.redeem('user:default/alice', { ...call, arguments: '{"plan":"p2","namespace":"shop"}' }, token),
    ).toMatchObject({
      ok: false,
      reason: expect.stringContaining('does not match'),
    });
    expect(b.redeem('user:default/alice', { ...call, name: 'rollback' }, token)).toMatchObject({ ok: false });
    expect(b.redeem('user:default/alice', { ...call, id: 'c2' }, token)).toMatchObject({ ok: false });
    expect(b.redeem('user:default/alice', call, `${token}x`)).toMatchObject({ ok: false });
    // the same arguments spelt in another key order are the same call
    expect(b.redeem('user:default/alice', { ...call, arguments: '{"namespace":"shop","plan":"p1"}' }, token)).toEqual({
      ok: true,
    });
    expect(b.redeem('user:default/alice', call, token)).toEqual({
      ok: false,
      reason: 'this confirmation was already used',
    });
    const late = b.issue('user:default/alice', call);
    now += 60_001;
    expect(b.redeem('user:default/alice', call, late.token)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('expired'),
    });
  });

  it('are not valid in another backend process (another key)', () => {
    const { token } = new ConfirmationBinder().issue('user:default/alice', call);
    expect(new ConfirmationBinder().redeem('user:default/alice', call, token)).toMatchObject({ ok: false });
  });
});

describe('conversation checks', () => {
  const call = (id: string, name = 'promote') => ({
    id,
    type: 'function' as const,
    function: { name, arguments: '{}' },
  });
  const waiting: ChatMessage[] = [
    { role: 'user', content: 'promote' },
    { role: 'assistant', content: null, tool_calls: [call('a', 'list'), call('b')] },
    { role: 'tool', tool_call_id: 'a', content: 'ok' },
  ];
  it('finds the call that waits for confirmation, and nothing else', () => {
    expect(pendingCall(waiting, 'b')).toEqual(call('b'));
    expect(pendingCall(waiting, 'a')).toMatch(/not the one waiting/);
    expect(pendingCall([...waiting, { role: 'tool', tool_call_id: 'b', content: 'x' }], 'b')).toMatch(
      /already answered/,
    );
    expect(pendingCall([...waiting, { role: 'user', content: 'hm' }], 'b')).toMatch(
      /no tool call waiting|no longer waiting/,
    );
  });

  it('answers calls left unconfirmed before a new question', () => {
    const next = closeUnansweredCalls([...waiting, { role: 'user', content: 'never mind' }]);
    expect(next.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'user']);
    expect(next[3]).toEqual({
      role: 'tool',
      tool_call_id: 'b',
      content: 'Not run: the user did not confirm this call.',
    });
  });
});

describe('app-config', () => {
  const read = (llm: object) => readLlmConfig(new ConfigReader({ llm }));
  it('reads defaults, Azure settings and few-shot tool exchanges', () => {
    const c = read({
      baseUrl: 'https://x.openai.azure.com/openai/deployments/d1/',
      model: 'gpt',
      apiKey: 'k',
      apiKeyHeader: 'api-key',
      apiVersion: '2024-10-21',
      fewShot: [
        { role: 'user', content: 'what runs in prod?' },
        { role: 'assistant', toolCall: { name: 'list', arguments: { environment: 'prod' } } },
        { role: 'tool', content: 'checkout v1' },
        { role: 'assistant', content: 'checkout runs v1.' },
      ],
    });
    expect(c).toMatchObject({
      baseUrl: 'https://x.openai.azure.com/openai/deployments/d1',
      maxToolRounds: 5,
      timeoutSeconds: 60,
    });
    expect(c?.fewShot[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'fewshot-1', type: 'function', function: { name: 'list', arguments: '{"environment":"prod"}' } },
      ],
    });
    expect(c?.fewShot[2]).toEqual({ role: 'tool', tool_call_id: 'fewshot-1', content: 'checkout v1' });
    expect(readLlmConfig(new ConfigReader({}))).toBeUndefined();
  });

  it('refuses what cannot work, naming the key', () => {
    expect(() => read({ baseUrl: 'file:///etc', model: 'm' })).toThrow(/promotions.assistant.llm.baseUrl/);
    expect(() => read({ baseUrl: 'http://x', model: 'm', maxToolRounds: 0 })).toThrow(/maxToolRounds/);
    expect(() => read({ baseUrl: 'http://x', model: 'm', fewShot: [{ role: 'tool', content: 'x' }] })).toThrow(
      /fewShot\[0\]: a tool message must follow/,
    );
  });
});

// ---- the loop, with a scripted model (the real model runs in assistant.int.test.ts) ----

const tools: McpTool[] = [
  { name: 'list', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
  { name: 'plan', inputSchema: { type: 'object' }, annotations: { readOnlyHint: false, destructiveHint: false } },
  { name: 'promote', inputSchema: { type: 'object' }, annotations: { readOnlyHint: false, destructiveHint: true } },
];

function scripted(replies: Array<Partial<ModelReply>>) {
  const seen: ChatMessage[][] = [];
  const chat: ChatRound = async ({ messages, onText }) => {
    seen.push(messages.filter((m) => m.role !== 'system') as ChatMessage[]);
    const r = replies.shift();
    if (!r) throw new Error('the script ran out');
    if (r.content) onText(r.content);
    return { content: r.content ?? '', toolCalls: r.toolCalls ?? [] };
  };
  return { chat, seen };
}

async function loop(chat: ChatRound, history: ChatMessage[], o: { maxToolRounds?: number } = {}) {
  const events: AssistantEvent[] = [];
  const ran: string[] = [];
  await runConversation(
    {
      chat,
      preamble: [{ role: 'system', content: 'sys' }],
      tools,
      callTool: async (name, args) => {
        ran.push(`${name} ${JSON.stringify(args)}`);
        return { content: [{ type: 'text', text: `${name} done` }] };
      },
      issueConfirmation: () => ({ token: 't', expiresAt: new Date(0) }),
      maxToolRounds: o.maxToolRounds ?? 5,
      maxToolResultChars: 100,
      signal: new AbortController().signal,
      emit: (e) => events.push(e),
    },
    history,
  );
  return { events, ran };
}

const textCall = (name: string, args: object) => `<tool_call>{"name":"${name}","arguments":${JSON.stringify(args)}}`;

describe('chat loop', () => {
  it('runs read-only calls, hands their output back and ends with the answer', async () => {
    const { chat, seen } = scripted([
      { content: textCall('list', { environment: 'prod' }) },
      { content: 'checkout runs v1.0.0.' },
    ]);
    const { events, ran } = await loop(chat, [{ role: 'user', content: 'what runs in prod?' }]);
    expect(ran).toEqual(['list {"environment":"prod"}']);
    expect(events.filter((e) => e.type === 'text').map((e) => (e as { delta: string }).delta)).toEqual([
      'checkout runs v1.0.0.',
    ]);
    expect(seen[1].at(-1)).toMatchObject({ role: 'tool', content: 'list done' });
    expect(events.at(-1)).toMatchObject({ type: 'done', reason: 'answered' });
  });

  it('never runs a writing or destructive call: it stops with a pending call instead', async () => {
    for (const name of ['plan', 'promote']) {
      const { chat } = scripted([
        {
          toolCalls: [
            { id: 'c1', type: 'function', function: { name, arguments: '{"plan":"p1"}' } },
            { id: 'c2', type: 'function', function: { name: 'list', arguments: '{}' } },
          ],
        },
      ]);
      const { events, ran } = await loop(chat, [{ role: 'user', content: 'go' }]);
      expect(ran).toEqual([]);
      expect(events.map((e) => e.type)).toEqual(['pending', 'done']);
      expect(events[0]).toMatchObject({ id: 'c1', name, arguments: { plan: 'p1' }, token: 't' });
      // the calls after the waiting one never happened
      const done = events[1] as Extract<AssistantEvent, { type: 'done' }>;
      expect(done.reason).toBe('pending');
      expect(done.messages.at(-1)).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'c1' }] });
    }
  });

  it('ends with the answer when the model runs on into a read call it already made (keys in any order)', async () => {
    const { chat, seen } = scripted([
      { content: textCall('list', { environment: 'prod', name: 'checkout' }) },
      { content: `checkout runs v1.0.0 in prod.\n${textCall('list', { name: 'checkout', environment: 'prod' })}` },
    ]);
    const { events, ran } = await loop(chat, [{ role: 'user', content: 'what runs in prod?' }]);
    expect(ran).toEqual(['list {"environment":"prod","name":"checkout"}']);
    expect(seen).toHaveLength(2);
    const done = events.at(-1) as Extract<AssistantEvent, { type: 'done' }>;
    expect(done.reason).toBe('answered');
    expect(done.messages.at(-1)).toEqual({ role: 'assistant', content: 'checkout runs v1.0.0 in prod.' });
  });

  it('runs a read call again when its arguments differ, or when no answer came before it', async () => {
    const { chat } = scripted([
      { content: textCall('list', { environment: 'prod' }) },
      { content: `prod has checkout.\n${textCall('list', { environment: 'dev' })}` },
      { content: textCall('list', { environment: 'dev' }) },
      { content: 'done.' },
    ]);
    const { events, ran } = await loop(chat, [{ role: 'user', content: 'x' }]);
    expect(ran).toEqual(['list {"environment":"prod"}', 'list {"environment":"dev"}', 'list {"environment":"dev"}']);
    expect(events.at(-1)).toMatchObject({ type: 'done', reason: 'answered' });
  });

  it('stops after maxToolRounds rounds of tool calls', async () => {
    const { chat } = scripted(Array.from({ length: 5 }, () => ({ content: textCall('list', {}) })));
    const { events, ran } = await loop(chat, [{ role: 'user', content: 'loop' }], { maxToolRounds: 2 });
    expect(ran).toHaveLength(2);
    expect(events.at(-2)).toMatchObject({ type: 'error', code: 'max_rounds' });
    expect(events.at(-1)).toMatchObject({ type: 'done', reason: 'stopped' });
  });

  it('answers unknown tools and bad arguments without running anything, and lets the model go on', async () => {
    const { chat, seen } = scripted([
      {
        toolCalls: [
          { id: 'c1', type: 'function', function: { name: 'drop_all', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'list', arguments: '{"kind": ' } },
        ],
      },
      { content: 'Sorry.' },
    ]);
    const { ran } = await loop(chat, [{ role: 'user', content: 'x' }]);
    expect(ran).toEqual([]);
    expect(seen[1].slice(-2)).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: expect.stringContaining('there is no tool "drop_all"') },
      { role: 'tool', tool_call_id: 'c2', content: expect.stringContaining('not valid JSON') },
    ]);
  });

  it('reports a malformed text tool call once the retries are used up', async () => {
    const { chat, seen } = scripted([{ content: '<tool_call>{name: list}' }, { content: '<tool_call>{name: list}' }]);
    const { events } = await loop(chat, [{ role: 'user', content: 'x' }], { maxToolRounds: 2 });
    expect(seen[1].at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('not valid JSON') });
    expect(events.at(-2)).toMatchObject({ type: 'error', code: 'malformed_tool_call' });
  });
});

// ---- the client against endpoints that fail (the working path runs against llama-server) ----

describe('chat client errors', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));
  const cfg = (baseUrl: string, more: Partial<LlmConfig> = {}): LlmConfig => ({
    baseUrl,
    model: 'm',
    apiKey: 'secret-key',
    apiKeyHeader: 'authorization',
    fewShot: [],
    maxToolRounds: 5,
    timeoutSeconds: 5,
    maxToolResultChars: 100,
    ...more,
  });
  const listen = async (handler: Parameters<typeof createServer>[1]) => {
    server = createServer(handler);
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  };
  const ask = (c: LlmConfig) =>
    createChatClient(c)({
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      signal: new AbortController().signal,
      onText: () => undefined,
    });

  it('a closed port: the endpoint cannot be reached', async () => {
    const url = await listen(() => undefined);
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;
    await expect(ask(cfg(url))).rejects.toMatchObject({
      code: 'model_unreachable',
      message: expect.stringContaining('ECONNREFUSED'),
    });
  });

  it('a stalled endpoint: a timeout naming the setting', async () => {
    const url = await listen(() => undefined); // never answers
    await expect(ask(cfg(url, { timeoutSeconds: 1 }))).rejects.toMatchObject({
      code: 'model_timeout',
      message: expect.stringContaining('timeoutSeconds'),
    });
  });

  it("Azure's api-key header and api-version, and a 500 worded without the key", async () => {
    const seen: Array<{ url?: string; key?: string; auth?: string }> = [];
    const url = await listen((req, res) => {
      seen.push({ url: req.url, key: req.headers['api-key'] as string, auth: req.headers.authorization });
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"model overloaded"}}');
    });
    const e = await ask(cfg(url, { apiKeyHeader: 'api-key', apiVersion: '2024-10-21' })).catch((x) => x);
    expect(seen).toEqual([{ url: '/v1/chat/completions?api-version=2024-10-21', key: 'secret-key', auth: undefined }]);
    expect(e).toMatchObject({ code: 'model_error', message: expect.stringContaining('answered 500') });
    expect(e.message).toContain('model overloaded');
    expect(e.message).not.toContain('secret-key');
  });
});
