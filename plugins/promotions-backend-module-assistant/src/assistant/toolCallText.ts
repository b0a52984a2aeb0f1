/**
 * Tool calls written as text, the way small models (and chat templates without structured tool
 * support) emit them: `<tool_call>{"name": "list", "arguments": {...}}</tool_call>`. With
 * `stop: ["</tool_call>"]` the server cuts the closing tag, so an unterminated last call counts too.
 */

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';

export interface TextToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

export type TextToolCalls =
  | { ok: true; text: string; calls: TextToolCall[] }
  | { ok: false; text: string; error: string; raw: string };

/** Strips a ```json fence around the call's JSON, which some models add. */
function unfence(s: string): string {
  const m = /^```(?:json)?\s*([\s\S]*?)\s*(?:```)?$/.exec(s.trim());
  return (m ? m[1] : s).trim();
}

function parseOne(raw: string): TextToolCall | string {
  let v: unknown;
  try {
    v = JSON.parse(unfence(raw));
  } catch (e) {
    return `not valid JSON (${(e as Error).message})`;
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return 'not a JSON object';
  const o = v as Record<string, unknown>;
  const name = o.name;
  if (typeof name !== 'string' || !name) return 'no "name"';
  let args = o.arguments ?? o.parameters ?? {};
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return '"arguments" is a string that is not JSON';
    }
  }
  if (!args || typeof args !== 'object' || Array.isArray(args)) return '"arguments" is not an object';
  return { name, arguments: args as Record<string, unknown> };
}

/** The text around the calls, and the calls; an error names the first call that does not parse. */
export function parseTextToolCalls(content: string): TextToolCalls {
  const calls: TextToolCall[] = [];
  let text = '';
  let rest = content;
  for (;;) {
    const i = rest.indexOf(OPEN);
    if (i < 0) {
      text += rest;
      break;
    }
    text += rest.slice(0, i);
    rest = rest.slice(i + OPEN.length);
    const j = rest.indexOf(CLOSE);
    const raw = j < 0 ? rest : rest.slice(0, j);
    rest = j < 0 ? '' : rest.slice(j + CLOSE.length);
    const call = parseOne(raw);
    if (typeof call === 'string')
      return { ok: false, text: text.trim(), error: `tool call ${call}`, raw: raw.trim().slice(0, 300) };
    calls.push(call);
  }
  return { ok: true, text: text.trim(), calls };
}

/**
 * Streams answer text while holding back anything that may be a text tool call: text is released up
 * to a possible start of `<tool_call>`; once the tag is seen, the rest of the message is withheld.
 */
export class ToolCallTextFilter {
  private held = '';
  private inCall = false;

  push(delta: string): string {
    if (this.inCall) return '';
    this.held += delta;
    const i = this.held.indexOf(OPEN);
    if (i >= 0) {
      this.inCall = true;
      const out = this.held.slice(0, i);
      this.held = '';
      return out;
    }
    // Keep the longest suffix that is a prefix of the tag.
    let keep = 0;
    for (let n = Math.min(OPEN.length - 1, this.held.length); n > 0; n--)
      if (OPEN.startsWith(this.held.slice(-n))) {
        keep = n;
        break;
      }
    const out = this.held.slice(0, this.held.length - keep);
    this.held = this.held.slice(this.held.length - keep);
    return out;
  }

  /** The message ended: what was held back was plain text after all. */
  end(): string {
    const out = this.inCall ? '' : this.held;
    this.held = '';
    return out;
  }
}
