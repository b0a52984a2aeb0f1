import type { ChatToolCall } from '@kpromo/plugin-promotions-common';

/**
 * Incremental Server-Sent Events decoder: feed text as it arrives, get the `data` payload of every
 * complete event (multi-line data joined with \n; comments, ids and event names ignored). Handles
 * LF, CRLF and CR line ends and lines split across chunks.
 */
export class SseDecoder {
  private buf = '';
  private data: string[] = [];

  push(text: string): string[] {
    this.buf += text;
    const out: string[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      // A lone CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (!m || (m[0] === '\r' && m.index === this.buf.length - 1)) break;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      this.line(line, out);
    }
    return out;
  }

  /** The stream ended: an event without its blank line still counts. */
  end(): string[] {
    const out: string[] = [];
    if (this.buf) this.line(this.buf, out);
    this.buf = '';
    this.line('', out);
    return out;
  }

  private line(line: string, out: string[]) {
    if (line === '') {
      if (this.data.length) out.push(this.data.join('\n'));
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
  }
}

/** One `chat.completion.chunk` (only the fields the client reads). */
export interface ChatChunk {
  choices?: Array<{
    delta?: {
      content?: string | null;
      tool_calls?: Array<{ index?: number; id?: string; function?: { name?: string; arguments?: string } }>;
    };
    finish_reason?: string | null;
  }>;
  error?: { message?: string };
}

export interface AssembledMessage {
  content: string;
  toolCalls: ChatToolCall[];
  finishReason?: string;
}

/**
 * Assembles the streamed deltas of one choice into the final message: text appended, tool calls
 * collected by `index` (id and name arrive once, the arguments JSON in pieces).
 */
export class ChatStreamAssembler {
  private content = '';
  private calls = new Map<number, { id?: string; name: string; arguments: string }>();
  private finish?: string;

  /** Applies one chunk; returns its text delta (empty when it had none). */
  apply(chunk: ChatChunk): string {
    const choice = chunk.choices?.[0];
    if (!choice) return '';
    if (choice.finish_reason) this.finish = choice.finish_reason;
    const d = choice.delta ?? {};
    for (const [pos, t] of (d.tool_calls ?? []).entries()) {
      const index = t.index ?? pos;
      const cur = this.calls.get(index) ?? { name: '', arguments: '' };
      if (t.id) cur.id = t.id;
      if (t.function?.name) cur.name += t.function.name;
      if (t.function?.arguments) cur.arguments += t.function.arguments;
      this.calls.set(index, cur);
    }
    const text = typeof d.content === 'string' ? d.content : '';
    this.content += text;
    return text;
  }

  result(idPrefix = 'call'): AssembledMessage {
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([i, c]) => ({
        id: c.id || `${idPrefix}-${i}`,
        type: 'function' as const,
        function: { name: c.name, arguments: c.arguments },
      }));
    return { content: this.content, toolCalls, ...(this.finish ? { finishReason: this.finish } : {}) };
  }
}
