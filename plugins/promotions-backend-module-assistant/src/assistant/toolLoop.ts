import { randomUUID } from 'node:crypto';
import {
  type AssistantEvent,
  type ChatMessage,
  type ChatToolCall,
  needsConfirmation,
  type ToolAnnotations,
  toolSafety,
} from '@kpromo/plugin-promotions-common';
import type { ChatRound, OpenAiTool } from './chatClient.js';
import type { ConfirmableCall } from './confirmation.js';
import { parseTextToolCalls, ToolCallTextFilter } from './toolCallText.js';

/** An MCP tool as tools/list describes it. */
export interface McpTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: object;
  annotations?: ToolAnnotations;
}

export interface ToolResult {
  content?: Array<{ type: string; text?: string }>;
  structuredContent?: unknown;
  isError?: boolean;
}

export interface LoopOptions {
  chat: ChatRound;
  /** System prompt and few-shot messages: server-side, placed before the conversation every round. */
  preamble: Array<ChatMessage | { role: 'system'; content: string }>;
  /** The tools offered to the model: those the caller may use (tools/list as the caller). */
  tools: McpTool[];
  /** Runs a tool as the caller (through the controller's MCP endpoint, authorised as them). */
  callTool: (name: string, args: Record<string, unknown>) => Promise<ToolResult>;
  /** Issues the confirmation token for a call that waits for the user. */
  issueConfirmation: (call: ConfirmableCall) => { token: string; expiresAt: Date };
  maxToolRounds: number;
  maxToolResultChars: number;
  signal: AbortSignal;
  emit: (e: AssistantEvent) => void;
}

/** Largest structured tool output passed on to the browser's card (larger: text only). */
const MAX_STRUCTURED_JSON = 50_000;

export function toOpenAiTools(tools: McpTool[]): OpenAiTool[] {
  return tools.map((t) => ({
    type: 'function',
    function: {
      name: t.name,
      description: [t.title, t.description, needsConfirmation(t) ? '(changes things: the user must confirm)' : '']
        .filter(Boolean)
        .join(' — '),
      parameters: { type: 'object', properties: {}, ...t.inputSchema },
    },
  }));
}

/** A tool's output as text for the model: its text content, else its structured content as JSON. */
export function resultText(r: ToolResult): string {
  const text = (r.content ?? [])
    .map((c) => c.text ?? '')
    .filter(Boolean)
    .join('\n');
  if (text) return text;
  return r.structuredContent === undefined ? '' : JSON.stringify(r.structuredContent);
}

function parseArgs(raw: string): Record<string, unknown> | string {
  try {
    const v = JSON.parse(raw || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : 'the arguments are not a JSON object';
  } catch (e) {
    return `the arguments are not valid JSON (${(e as Error).message})`;
  }
}

/** A read call's identity: its tool and its arguments with the keys sorted (`{"a":1,"b":2}` = `{"b":2,"a":1}`). */
function callKey(name: string, args: Record<string, unknown>): string {
  return `${name} ${JSON.stringify(args, Object.keys(args).sort())}`;
}

/**
 * The chat loop: asks the model, runs the read-only tools it calls (as the caller), hands their
 * output back, and repeats until the model answers in text, for at most `maxToolRounds` rounds of
 * tool calls. A call that changes something is never run here: the loop stops with a `pending`
 * event; the route runs it only on a later request carrying the user's confirmation
 * (`resume`), then the loop goes on. A reply that answers in text and then only repeats read calls
 * already answered ends the chat with that answer: a small model may run on past its answer into the
 * call it just made, and running it again would tell it nothing new (it would loop until the round cap).
 */
export async function runConversation(
  o: LoopOptions,
  history: ChatMessage[],
  resume?: { call: ChatToolCall; approve: boolean },
): Promise<void> {
  const c = new Conversation(o, history);
  if (resume) await c.resume(resume);
  await c.run();
}

/** One request's conversation: the messages so far and the read calls already answered. */
class Conversation {
  private readonly o: LoopOptions;
  private readonly msgs: ChatMessage[];
  private readonly byName: Map<string, McpTool>;
  private readonly openAiTools: OpenAiTool[];
  /** The read calls run in this conversation so far (callKey). */
  private readonly answered = new Set<string>();

  constructor(o: LoopOptions, history: ChatMessage[]) {
    this.o = o;
    this.msgs = [...history];
    this.byName = new Map(o.tools.map((t) => [t.name, t]));
    this.openAiTools = toOpenAiTools(o.tools);
  }

  /** The user's answer to a call that waited for confirmation: run it, or tell the model it was declined. */
  async resume(resume: { call: ChatToolCall; approve: boolean }): Promise<void> {
    const { o, msgs } = this;
    const tool = this.byName.get(resume.call.function.name);
    const args = parseArgs(resume.call.function.arguments);
    if (!tool || typeof args === 'string') this.refuse(resume.call, `cannot run ${resume.call.function.name}`);
    else if (resume.approve) await this.runTool(resume.call, tool, args);
    else {
      o.emit({
        type: 'tool_result',
        id: resume.call.id,
        name: tool.name,
        isError: false,
        summary: 'declined by the user',
      });
      msgs.push({
        role: 'tool',
        tool_call_id: resume.call.id,
        content: 'The user declined this call; nothing was changed.',
      });
    }
  }

  /** Rounds of asking the model and running its read calls, until it answers, waits for the user, or hits the cap. */
  async run(): Promise<void> {
    const { o, msgs } = this;
    for (let rounds = 0; ; ) {
      const reply = await this.ask();
      let calls = reply.toolCalls;
      let content = reply.content;
      if (!calls.length) {
        const parsed = parseTextToolCalls(reply.content);
        if (!parsed.ok) {
          // Tell the model what was wrong and let it try again, within the round cap.
          msgs.push({ role: 'assistant', content: reply.content });
          msgs.push({
            role: 'user',
            content: `(Your ${parsed.error}: ${parsed.raw}. Write it as <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>, or answer in plain text.)`,
          });
          if (++rounds >= o.maxToolRounds) {
            o.emit({
              type: 'error',
              code: 'malformed_tool_call',
              message: `the model wrote a tool call that could not be read (${parsed.error}): ${parsed.raw}`,
            });
            o.emit({ type: 'done', reason: 'stopped', messages: msgs });
            return;
          }
          continue;
        }
        content = parsed.text;
        calls = parsed.calls.map((c) => ({
          id: `call-${randomUUID().slice(0, 8)}`,
          type: 'function' as const,
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        }));
      }
      if (content?.trim() && this.repeatsOnly(calls)) calls = [];
      const assistant: Extract<ChatMessage, { role: 'assistant' }> = {
        role: 'assistant',
        content: content || null,
        ...(calls.length ? { tool_calls: calls } : {}),
      };
      msgs.push(assistant);
      if (!calls.length) {
        o.emit({ type: 'done', reason: 'answered', messages: msgs });
        return;
      }
      if (rounds++ >= o.maxToolRounds) {
        // The model wants yet another round: stop, leaving these calls unanswered and unrun.
        msgs.pop();
        o.emit({
          type: 'error',
          code: 'max_rounds',
          message: `stopped after ${o.maxToolRounds} rounds of tool calls without an answer (promotions.assistant.llm.maxToolRounds)`,
        });
        o.emit({ type: 'done', reason: 'stopped', messages: msgs });
        return;
      }
      if ((await this.runCalls(assistant, calls)) === 'pending') return;
    }
  }

  /** One round with the model; its text streams to the browser without the tool calls written as text. */
  private async ask() {
    const { o } = this;
    const filter = new ToolCallTextFilter();
    const reply = await o.chat({
      messages: [...o.preamble, ...this.msgs],
      tools: this.openAiTools,
      signal: o.signal,
      onText: (d) => {
        const visible = filter.push(d);
        if (visible) o.emit({ type: 'text', delta: visible });
      },
    });
    const tail = filter.end();
    if (tail) o.emit({ type: 'text', delta: tail });
    return reply;
  }

  /** Whether every call only repeats a read call already answered. */
  private repeatsOnly(calls: ChatToolCall[]): boolean {
    return (
      calls.length > 0 &&
      calls.every((c) => {
        const tool = this.byName.get(c.function.name);
        const args = parseArgs(c.function.arguments);
        return (
          !!tool && !needsConfirmation(tool) && typeof args !== 'string' && this.answered.has(callKey(tool.name, args))
        );
      })
    );
  }

  /**
   * Runs a reply's read calls in order; at the first call that changes something, the loop stops
   * and waits for the user (`pending`).
   */
  private async runCalls(
    assistant: Extract<ChatMessage, { role: 'assistant' }>,
    calls: ChatToolCall[],
  ): Promise<'pending' | undefined> {
    const { o, msgs, byName } = this;
    for (const [i, call] of calls.entries()) {
      const tool = byName.get(call.function.name);
      if (!tool) {
        this.refuse(call, `there is no tool "${call.function.name}"; the tools are: ${[...byName.keys()].join(', ')}`);
        continue;
      }
      const args = parseArgs(call.function.arguments);
      if (typeof args === 'string') {
        this.refuse(call, `${tool.name}: ${args}`);
        continue;
      }
      if (needsConfirmation(tool)) {
        // Later calls of this reply never happened: the model may ask again after the user's answer.
        assistant.tool_calls = calls.slice(0, i + 1);
        const { token, expiresAt } = o.issueConfirmation({
          id: call.id,
          name: tool.name,
          arguments: call.function.arguments,
        });
        o.emit({
          type: 'pending',
          id: call.id,
          name: tool.name,
          ...(tool.title ? { title: tool.title } : {}),
          arguments: args,
          safety: toolSafety(tool),
          token,
          expiresAt: expiresAt.toISOString(),
        });
        o.emit({ type: 'done', reason: 'pending', messages: msgs });
        return 'pending';
      }
      await this.runTool(call, tool, args);
    }
    return undefined;
  }

  /** Runs a tool as the caller and hands its output to the model (and a summary to the browser). */
  private async runTool(call: ChatToolCall, tool: McpTool, args: Record<string, unknown>): Promise<void> {
    const { o } = this;
    o.emit({ type: 'tool_call', id: call.id, name: tool.name, arguments: args, safety: toolSafety(tool) });
    let result: ToolResult;
    try {
      result = await o.callTool(tool.name, args);
    } catch (e) {
      result = { isError: true, content: [{ type: 'text', text: (e as Error).message }] };
    }
    if (!needsConfirmation(tool) && result.isError !== true) this.answered.add(callKey(tool.name, args));
    const text = resultText(result).slice(0, o.maxToolResultChars);
    const structured =
      result.structuredContent !== undefined && JSON.stringify(result.structuredContent).length <= MAX_STRUCTURED_JSON
        ? { structuredContent: result.structuredContent }
        : {};
    o.emit({
      type: 'tool_result',
      id: call.id,
      name: tool.name,
      isError: result.isError === true,
      summary: text.slice(0, 2000),
      ...structured,
    });
    this.msgs.push({
      role: 'tool',
      tool_call_id: call.id,
      content: result.isError ? `Error: ${text}` : text || '(no output)',
    });
  }

  /** A call the loop answers itself without running anything (unknown tool, bad arguments). */
  private refuse(call: ChatToolCall, message: string): void {
    this.o.emit({ type: 'tool_result', id: call.id, name: call.function.name, isError: true, summary: message });
    this.msgs.push({ role: 'tool', tool_call_id: call.id, content: `Error: ${message}` });
  }
}
