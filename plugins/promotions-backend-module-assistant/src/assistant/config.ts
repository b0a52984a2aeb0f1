import type { Config } from '@backstage/config';
import type { ChatMessage } from '@kpromo/plugin-promotions-common';

/**
 * `promotions.assistant.llm`: the OpenAI-compatible chat endpoint the portal's assistant talks to,
 * from the backend only (the key never reaches the browser).
 *
 * ```yaml
 * promotions:
 *   assistant:
 *     llm:
 *       baseUrl: https://api.openai.com/v1       # POST {baseUrl}/chat/completions
 *       model: gpt-4.1-mini
 *       apiKey: ${OPENAI_API_KEY}
 *       # Azure OpenAI: baseUrl https://<resource>.openai.azure.com/openai/deployments/<deployment>,
 *       # apiVersion: 2024-10-21, apiKeyHeader: api-key
 *       stop: ['</tool_call>']                  # small models that write tool calls as text
 *       systemPrompt: ...                       # replaces the built-in one
 *       fewShot: []                             # worked exchanges placed before the conversation
 *       tools: [list, state, diff, plan, promote] # offer only these MCP tools (default: all the caller may use)
 *       maxToolRounds: 5
 *       timeoutSeconds: 60
 *       temperature: 0
 *       seed: 42
 * ```
 */
export interface LlmConfig {
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** `authorization` (Bearer; OpenAI, vLLM, Ollama, llama.cpp) or `api-key` (Azure OpenAI). */
  apiKeyHeader: 'authorization' | 'api-key';
  /** Azure OpenAI's `api-version` query parameter. */
  apiVersion?: string;
  stop?: string[];
  systemPrompt?: string;
  fewShot: ChatMessage[];
  tools?: string[];
  maxToolRounds: number;
  timeoutSeconds: number;
  temperature?: number;
  seed?: number;
  maxTokens?: number;
  /** Tool output handed back to the model is cut to this many characters. */
  maxToolResultChars: number;
}

const where = (k: string) => `promotions.assistant.llm.${k}`;

function positiveInt(c: Config, k: string, dflt: number, max: number): number {
  const v = c.getOptionalNumber(k) ?? dflt;
  if (!Number.isInteger(v) || v < 1 || v > max)
    throw new Error(`${where(k)} must be an integer from 1 to ${max}, got ${v}`);
  return v;
}

/**
 * Few-shot messages: `{role: user|assistant|tool, content}`; an assistant message may carry
 * `toolCall: {name, arguments}` (an object), answered by the next `tool` message.
 */
function readFewShot(c: Config): ChatMessage[] {
  const out: ChatMessage[] = [];
  let pending: string | undefined;
  (c.getOptionalConfigArray('fewShot') ?? []).forEach((m, i) => {
    const at = `${where('fewShot')}[${i}]`;
    const role = m.getString('role');
    const content = m.getOptionalString('content') ?? '';
    if (role === 'user') out.push({ role, content });
    else if (role === 'assistant') {
      const call = m.getOptionalConfig('toolCall');
      if (!call) out.push({ role, content });
      else {
        pending = `fewshot-${i}`;
        const args = call.getOptional('arguments') ?? {};
        if (typeof args !== 'object' || Array.isArray(args))
          throw new Error(`${at}.toolCall.arguments must be an object`);
        out.push({
          role,
          content: content || null,
          tool_calls: [
            {
              id: pending,
              type: 'function',
              function: { name: call.getString('name'), arguments: JSON.stringify(args) },
            },
          ],
        });
      }
    } else if (role === 'tool') {
      if (!pending) throw new Error(`${at}: a tool message must follow an assistant message with toolCall`);
      out.push({ role, tool_call_id: pending, content });
      pending = undefined;
    } else throw new Error(`${at}.role must be user, assistant or tool, got ${JSON.stringify(role)}`);
  });
  if (pending) throw new Error(`${where('fewShot')}: the last toolCall has no tool message answering it`);
  return out;
}

export function readLlmConfig(assistant: Config | undefined): LlmConfig | undefined {
  const c = assistant?.getOptionalConfig('llm');
  if (!c) return undefined;
  const baseUrl = c.getString('baseUrl').replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/i.test(baseUrl))
    throw new Error(`${where('baseUrl')} must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
  const apiKeyHeader = c.getOptionalString('apiKeyHeader') ?? 'authorization';
  if (apiKeyHeader !== 'authorization' && apiKeyHeader !== 'api-key')
    throw new Error(`${where('apiKeyHeader')} must be authorization or api-key, got ${JSON.stringify(apiKeyHeader)}`);
  const temperature = c.getOptionalNumber('temperature');
  if (temperature !== undefined && !(temperature >= 0 && temperature <= 2))
    throw new Error(`${where('temperature')} must be between 0 and 2, got ${temperature}`);
  const seed = c.getOptionalNumber('seed');
  if (seed !== undefined && !Number.isInteger(seed))
    throw new Error(`${where('seed')} must be an integer, got ${seed}`);
  const stop = c.getOptionalStringArray('stop');
  if (stop && (stop.length > 4 || stop.some((s) => !s)))
    throw new Error(`${where('stop')}: at most 4 non-empty strings (the OpenAI API's limit)`);
  return {
    baseUrl,
    model: c.getString('model'),
    apiKey: c.getOptionalString('apiKey'),
    apiKeyHeader,
    apiVersion: c.getOptionalString('apiVersion'),
    ...(stop ? { stop } : {}),
    systemPrompt: c.getOptionalString('systemPrompt'),
    fewShot: readFewShot(c),
    tools: c.getOptionalStringArray('tools'),
    maxToolRounds: positiveInt(c, 'maxToolRounds', 5, 50),
    timeoutSeconds: positiveInt(c, 'timeoutSeconds', 60, 3600),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(seed !== undefined ? { seed } : {}),
    ...(c.has('maxTokens') ? { maxTokens: positiveInt(c, 'maxTokens', 1024, 1_000_000) } : {}),
    maxToolResultChars: positiveInt(c, 'maxToolResultChars', 4000, 200_000),
  };
}
