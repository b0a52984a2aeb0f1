import { isDestructive, type ToolInfo } from './assistantSchema';
import type { ToolResult } from './mcpConnection';

/** OpenAI-compatible chat messages. */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export function toOpenAiTools(tools: ToolInfo[]) {
  return tools.map((t) => ({
    type: 'function' as const,
    function: {
      name: t.name,
      description: [t.title, t.description, isDestructive(t) ? '(destructive: the user must confirm)' : '']
        .filter(Boolean)
        .join(' — '),
      parameters: { type: 'object', properties: {}, ...t.inputSchema },
    },
  }));
}

export function resultText(r: ToolResult): string {
  if (r.structuredContent !== undefined) return JSON.stringify(r.structuredContent);
  return (r.content ?? []).map((c) => c.text ?? '').join('\n');
}

/** One round trip to /chat/completions. */
export async function completeChat(opts: {
  endpoint: string;
  model?: string;
  messages: ChatMessage[];
  tools: ToolInfo[];
  fetch: (url: string, init?: RequestInit) => Promise<Response>;
}): Promise<Extract<ChatMessage, { role: 'assistant' }>> {
  const res = await opts.fetch(`${opts.endpoint.replace(/\/$/, '')}/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      model: opts.model ?? 'default',
      messages: opts.messages,
      tools: toOpenAiTools(opts.tools),
      tool_choice: 'auto',
    }),
  });
  if (!res.ok) throw new Error(`chat endpoint answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  const body = (await res.json()) as { choices?: Array<{ message?: Extract<ChatMessage, { role: 'assistant' }> }> };
  const msg = body.choices?.[0]?.message;
  if (!msg) throw new Error('chat endpoint returned no message');
  return { role: 'assistant', content: msg.content ?? null, tool_calls: msg.tool_calls };
}

export const SYSTEM_PROMPT =
  'You help release engineers promote container images between environments with kpromo. Use the tools to answer; ' +
  'list before you act, prefer dry runs, and explain what a destructive tool will change before calling it. ' +
  'The user confirms every destructive tool call in the UI.';
