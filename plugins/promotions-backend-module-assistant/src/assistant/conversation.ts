import type { ChatMessage, ChatToolCall } from '@kpromo/plugin-promotions-common';
import { z } from 'zod';

const ToolCall = z.object({
  id: z.string().min(1).max(100),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1).max(100), arguments: z.string().max(20_000) }),
});

/** What the browser may send: its conversation (no system messages: the prompt is the server's). */
export const ChatBody = z.object({
  messages: z
    .array(
      z.discriminatedUnion('role', [
        z.object({ role: z.literal('user'), content: z.string().min(1).max(20_000) }),
        z.object({
          role: z.literal('assistant'),
          content: z.string().max(50_000).nullable(),
          tool_calls: z.array(ToolCall).max(20).optional(),
        }),
        z.object({
          role: z.literal('tool'),
          tool_call_id: z.string().min(1).max(100),
          content: z.string().max(50_000),
        }),
      ]),
    )
    .min(1)
    .max(200),
  confirm: z
    .object({ id: z.string().min(1).max(100), token: z.string().min(1).max(500), approve: z.boolean() })
    .optional(),
});

const answered = (msgs: ChatMessage[], from: number) =>
  new Set(msgs.slice(from).flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : [])));

/**
 * The call a confirmation answers: the last tool call of the conversation's last assistant message,
 * still unanswered (the loop stops right after the call it asks about). Anything else is refused.
 */
export function pendingCall(msgs: ChatMessage[], id: string): ChatToolCall | string {
  const at = msgs.findLastIndex((m) => m.role === 'assistant');
  const a = msgs[at];
  if (a?.role !== 'assistant' || !a.tool_calls?.length) return 'the conversation has no tool call waiting';
  const last = a.tool_calls[a.tool_calls.length - 1];
  if (last.id !== id) return `tool call ${id} is not the one waiting for confirmation`;
  if (msgs.slice(at + 1).some((m) => m.role !== 'tool')) return `tool call ${id} is no longer waiting`;
  if (answered(msgs, at + 1).has(id)) return `tool call ${id} was already answered`;
  return last;
}

/**
 * A new question after a call the user left unconfirmed: the API wants every tool call answered,
 * so each unanswered one gets "not run" (inserted before the new user message).
 */
export function closeUnansweredCalls(msgs: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const answerOpenCalls = () => {
    const at = out.findLastIndex((m) => m.role === 'assistant');
    const a = out[at];
    if (a?.role !== 'assistant') return;
    const done = answered(out, at + 1);
    for (const c of a.tool_calls ?? [])
      if (!done.has(c.id))
        out.push({ role: 'tool', tool_call_id: c.id, content: 'Not run: the user did not confirm this call.' });
  };
  for (const m of msgs) {
    if (m.role !== 'tool' && out.length && out[out.length - 1].role !== 'user') answerOpenCalls();
    out.push(m);
  }
  return out;
}
