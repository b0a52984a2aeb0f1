/**
 * Runs evaluation tasks through the portal assistant's own chat loop (runConversation, the chat
 * client, the system prompt) against an OpenAI-compatible endpoint, with the controller's MCP tools
 * over the world of ./world.ts, opened the way the assistant opens them (openCallerTools: the MCP
 * SDK client over Streamable HTTP, acting for a user). Every call the assistant makes is recorded:
 * reads as run, and the change it parks for the user's confirmation (never given: nothing changes).
 */
import { randomUUID } from 'node:crypto';
import { openCallerTools } from '../../plugins/promotions-backend-module-assistant/src/assistant/callerTools.js';
import { createChatClient } from '../../plugins/promotions-backend-module-assistant/src/assistant/chatClient.js';
import type { LlmConfig } from '../../plugins/promotions-backend-module-assistant/src/assistant/config.js';
import { DEFAULT_SYSTEM_PROMPT } from '../../plugins/promotions-backend-module-assistant/src/assistant/prompt.js';
import { runConversation } from '../../plugins/promotions-backend-module-assistant/src/assistant/toolLoop.js';
import { type ObservedCall, type Scored, scoreTask } from './score.js';
import type { EvalTask, Turn } from './tasks.js';
import { startWorld } from './world.js';

type LoopOptions = Parameters<typeof runConversation>[0];
type ChatMessage = Parameters<typeof runConversation>[1][number];
type AssistantEvent = Parameters<LoopOptions['emit']>[0];

/** The tools the evaluation offers the model: those its tasks need (read and change). */
export const EVAL_TOOLS = [
  'list',
  'state',
  'diff',
  'history',
  'plan',
  'promote',
  'rollback',
  'line_stops',
  'stop_line',
  'resume_line',
];

export interface TaskResult {
  task: EvalTask;
  calls: ObservedCall[];
  answer: string;
  /** An error event of the loop (model endpoint failure, round cap), if any. */
  error?: string;
  seconds: number;
  score: Scored;
}

/** Earlier turns as the chat messages the assistant's browser would send back. */
export function contextMessages(turns: Turn[] = []): ChatMessage[] {
  return turns.flatMap((t, i): ChatMessage[] => {
    if ('user' in t) return [{ role: 'user', content: t.user }];
    if ('answer' in t) return [{ role: 'assistant', content: t.answer }];
    const id = `ctx-${i}`;
    return [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: t.call.tool, arguments: JSON.stringify(t.call.args) } }],
      },
      { role: 'tool', tool_call_id: id, content: t.result },
    ];
  });
}

/** The calls a conversation's events show, in order: the reads run and the change parked. */
export function observedCalls(events: AssistantEvent[]): ObservedCall[] {
  return events.flatMap((e) =>
    e.type === 'tool_call' || e.type === 'pending'
      ? [{ name: e.name, arguments: e.arguments as Record<string, unknown>, write: e.safety !== 'read' }]
      : [],
  );
}

export async function runEvaluation(o: {
  llm: LlmConfig;
  tasks: EvalTask[];
  onResult?: (r: TaskResult) => void;
}): Promise<TaskResult[]> {
  const world = await startWorld();
  const ac = new AbortController();
  const tools = await openCallerTools({
    mcpUrl: world.mcpUrl,
    token: world.token,
    actor: { user: 'user:default/alice' },
    signal: ac.signal,
    only: o.llm.tools ?? EVAL_TOOLS,
  });
  const results: TaskResult[] = [];
  try {
    for (const task of o.tasks) {
      const events: AssistantEvent[] = [];
      const t0 = performance.now();
      await runConversation(
        {
          chat: createChatClient(o.llm),
          preamble: [{ role: 'system', content: o.llm.systemPrompt ?? DEFAULT_SYSTEM_PROMPT }, ...o.llm.fewShot],
          tools: tools.tools,
          callTool: tools.call,
          issueConfirmation: () => ({ token: randomUUID(), expiresAt: new Date(Date.now() + 60_000) }),
          maxToolRounds: o.llm.maxToolRounds,
          maxToolResultChars: o.llm.maxToolResultChars,
          signal: ac.signal,
          emit: (e) => events.push(e),
        },
        [...contextMessages(task.context), { role: 'user', content: task.ask }],
      ).catch((e: Error) => events.push({ type: 'error', code: 'model_error', message: e.message }));
      const calls = observedCalls(events);
      const error = events.find((e) => e.type === 'error');
      const r: TaskResult = {
        task,
        calls,
        answer: events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join(''),
        ...(error?.type === 'error' ? { error: error.message } : {}),
        seconds: (performance.now() - t0) / 1000,
        score: scoreTask(task, calls),
      };
      results.push(r);
      o.onResult?.(r);
    }
  } finally {
    ac.abort();
    await tools.close().catch(() => undefined);
    await world.close();
  }
  return results;
}
