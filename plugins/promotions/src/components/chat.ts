import type {
  AssistantEvent,
  AssistantStatus,
  ChatMessage,
  ChatRequestBody,
  ToolCallSafety,
} from '@kpromo/plugin-promotions-common';

/**
 * The portal side of the assistant's chat: the model runs behind the promotions backend
 * (POST /api/promotions/assistant/chat, promotions.assistant.llm), which holds the key, runs the
 * tools as the signed-in user and stops at every call that changes something until the user
 * confirms it here. This file holds the client and the pure reducer of the chat log.
 */

type FetchLike = (url: string, init?: RequestInit) => Promise<Response>;

/** Splits an NDJSON byte stream into parsed lines (a line may arrive in pieces). */
export class NdjsonDecoder {
  private buf = '';
  private readonly text = new TextDecoder();

  push(bytes?: Uint8Array): unknown[] {
    this.buf += bytes ? this.text.decode(bytes, { stream: true }) : this.text.decode();
    const lines = this.buf.split('\n');
    this.buf = lines.pop() ?? '';
    return lines.filter((l) => l.trim()).map((l) => JSON.parse(l));
  }

  end(): unknown[] {
    const rest = [...this.push(), ...(this.buf.trim() ? [JSON.parse(this.buf)] : [])];
    this.buf = '';
    return rest;
  }
}

export interface AssistantClient {
  status(): Promise<AssistantStatus>;
  /** Sends the conversation (and a confirmation); `onEvent` sees every event as it streams in. */
  chat(body: ChatRequestBody, onEvent: (e: AssistantEvent) => void, signal?: AbortSignal): Promise<void>;
}

async function failure(res: Response): Promise<Error> {
  const text = await res.text().catch(() => '');
  let message = text.slice(0, 300) || res.statusText;
  try {
    message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? message;
  } catch {
    // not JSON
  }
  return new Error(`the assistant answered ${res.status}: ${message}`);
}

/** `baseUrl`: the promotions backend (discovery's base URL of `promotions`); `fetch`: Backstage's fetchApi. */
export function assistantClient(baseUrl: () => Promise<string>, fetch: FetchLike): AssistantClient {
  return {
    async status() {
      const res = await fetch(`${await baseUrl()}/assistant`);
      if (!res.ok) throw await failure(res);
      return (await res.json()) as AssistantStatus;
    },
    async chat(body, onEvent, signal) {
      const res = await fetch(`${await baseUrl()}/assistant/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal,
      });
      if (!res.ok) throw await failure(res);
      const dec = new NdjsonDecoder();
      if (!res.body) {
        for (const e of [...dec.push(new TextEncoder().encode(await res.text())), ...dec.end()])
          onEvent(e as AssistantEvent);
        return;
      }
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        for (const e of dec.push(value)) onEvent(e as AssistantEvent);
      }
      for (const e of dec.end()) onEvent(e as AssistantEvent);
    },
  };
}

/** One entry of the chat log as the panel shows it. */
export type ChatEntry =
  | { kind: 'user'; text: string }
  | { kind: 'assistant'; text: string }
  | {
      kind: 'tool';
      id: string;
      name: string;
      args: Record<string, unknown>;
      safety: ToolCallSafety;
      state: 'running' | 'done' | 'failed';
      summary?: string;
      structuredContent?: unknown;
    }
  | {
      kind: 'pending';
      id: string;
      name: string;
      title?: string;
      args: Record<string, unknown>;
      safety: ToolCallSafety;
      token: string;
      expiresAt: string;
      /** Set once the user clicked (the entry stays in the log). */
      decided?: 'confirmed' | 'declined';
    }
  | { kind: 'error'; message: string };

/** The chat log after one event: text appended to the last answer, results filled into their card. */
export function applyEvent(log: ChatEntry[], e: AssistantEvent): ChatEntry[] {
  switch (e.type) {
    case 'text': {
      const last = log[log.length - 1];
      if (last?.kind === 'assistant') return [...log.slice(0, -1), { ...last, text: last.text + e.delta }];
      return [...log, { kind: 'assistant', text: e.delta }];
    }
    case 'tool_call':
      return [...log, { kind: 'tool', id: e.id, name: e.name, args: e.arguments, safety: e.safety, state: 'running' }];
    case 'tool_result': {
      const i = log.findLastIndex((x) => x.kind === 'tool' && x.id === e.id);
      const filled = {
        state: e.isError ? ('failed' as const) : ('done' as const),
        summary: e.summary,
        ...(e.structuredContent !== undefined ? { structuredContent: e.structuredContent } : {}),
      };
      if (i < 0) {
        // A declined call has no card of its own: its pending entry already says so.
        if (log.some((x) => x.kind === 'pending' && x.id === e.id)) return log;
        return [...log, { kind: 'tool', id: e.id, name: e.name, args: {}, safety: 'read', ...filled }];
      }
      return log.map((x, j) => (j === i && x.kind === 'tool' ? { ...x, ...filled } : x));
    }
    case 'pending':
      return [
        ...log,
        {
          kind: 'pending',
          id: e.id,
          name: e.name,
          ...(e.title ? { title: e.title } : {}),
          args: e.arguments,
          safety: e.safety,
          token: e.token,
          expiresAt: e.expiresAt,
        },
      ];
    case 'error':
      return [...log, { kind: 'error', message: e.message }];
    default:
      return log;
  }
}

/** The conversation to send next, from the last `done` event. */
export function conversationAfter(e: AssistantEvent, current: ChatMessage[]): ChatMessage[] {
  return e.type === 'done' ? e.messages : current;
}
