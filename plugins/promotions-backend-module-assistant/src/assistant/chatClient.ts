import type { AssistantErrorCode, ChatMessage, ChatToolCall } from '@kpromo/plugin-promotions-common';
import type { LlmConfig } from './config.js';
import { type ChatChunk, ChatStreamAssembler, SseDecoder } from './sse.js';

/** A failure of the model endpoint, worded for the user (never the key, never a stack). */
export class ModelEndpointError extends Error {
  constructor(
    readonly code: AssistantErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ModelEndpointError';
  }
}

export interface OpenAiTool {
  type: 'function';
  function: { name: string; description?: string; parameters: object };
}

export interface ModelReply {
  content: string;
  toolCalls: ChatToolCall[];
  finishReason?: string;
}

/** One model round: the messages in, the assistant's reply out, text streamed through `onText`. */
export type ChatRound = (req: {
  messages: Array<ChatMessage | { role: 'system'; content: string }>;
  tools: OpenAiTool[];
  signal: AbortSignal;
  onText: (delta: string) => void;
}) => Promise<ModelReply>;

/** `POST {baseUrl}/chat/completions` with the configured key (Bearer, or Azure's api-key header). */
export function chatRequest(cfg: LlmConfig, body: object): { url: string; init: RequestInit } {
  const url = new URL(`${cfg.baseUrl}/chat/completions`);
  if (cfg.apiVersion) url.searchParams.set('api-version', cfg.apiVersion);
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream' };
  if (cfg.apiKey) {
    if (cfg.apiKeyHeader === 'api-key') headers['api-key'] = cfg.apiKey;
    else headers.authorization = `Bearer ${cfg.apiKey}`;
  }
  return { url: url.toString(), init: { method: 'POST', headers, body: JSON.stringify(body) } };
}

/** What the endpoint's error answer says (OpenAI's `{error: {message}}` and plain text alike). */
function errorText(text: string): string {
  try {
    const e = (JSON.parse(text) as { error?: string | { message?: string } }).error;
    const m = typeof e === 'string' ? e : e?.message;
    if (m) return m.slice(0, 300);
  } catch {
    // not JSON
  }
  return text.slice(0, 300);
}

function httpError(cfg: LlmConfig, status: number, text: string): ModelEndpointError {
  const where = `${cfg.baseUrl} (model ${cfg.model})`;
  if (status === 401 || status === 403)
    return new ModelEndpointError(
      'model_unauthorized',
      `the model endpoint refused the key (${status}) at ${where}: check promotions.assistant.llm.apiKey${cfg.apiKeyHeader === 'api-key' ? '' : ' (Azure OpenAI needs apiKeyHeader: api-key)'}`,
    );
  const detail = errorText(text);
  return new ModelEndpointError(
    'model_error',
    `the model endpoint answered ${status} at ${where}${detail ? `: ${detail}` : ''}`,
  );
}

/**
 * An OpenAI-compatible /chat/completions client (OpenAI, Azure OpenAI, Ollama, vLLM, llama.cpp's
 * llama-server) that streams (`stream: true`) and assembles text and tool-call deltas. A server that
 * answers with one JSON body instead of SSE is read too.
 */
export function createChatClient(cfg: LlmConfig, fetchImpl: typeof fetch = fetch): ChatRound {
  return async ({ messages, tools, signal, onText }) => {
    const body = {
      model: cfg.model,
      messages,
      ...(tools.length ? { tools, tool_choice: 'auto' } : {}),
      stream: true,
      ...(cfg.stop ? { stop: cfg.stop } : {}),
      ...(cfg.temperature !== undefined ? { temperature: cfg.temperature } : {}),
      ...(cfg.seed !== undefined ? { seed: cfg.seed } : {}),
      ...(cfg.maxTokens !== undefined ? { max_tokens: cfg.maxTokens } : {}),
    };
    const { url, init } = chatRequest(cfg, body);
    const timeout = AbortSignal.timeout(cfg.timeoutSeconds * 1000);
    const both = AbortSignal.any([signal, timeout]);
    const failed = (e: unknown): ModelEndpointError => {
      if (e instanceof ModelEndpointError) return e;
      if (timeout.aborted)
        return new ModelEndpointError(
          'model_timeout',
          `the model endpoint ${cfg.baseUrl} did not answer within ${cfg.timeoutSeconds}s (promotions.assistant.llm.timeoutSeconds)`,
        );
      if (signal.aborted) return new ModelEndpointError('model_error', 'the request was cancelled');
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      return new ModelEndpointError(
        'model_unreachable',
        `cannot reach the model endpoint ${cfg.baseUrl}: ${cause?.code ?? cause?.message ?? (e as Error).message}`,
      );
    };
    let res: Response;
    try {
      res = await fetchImpl(url, { ...init, signal: both });
    } catch (e) {
      throw failed(e);
    }
    try {
      if (!res.ok) throw httpError(cfg, res.status, await res.text().catch(() => ''));
      const asm = new ChatStreamAssembler();
      const type = res.headers.get('content-type') ?? '';
      if (!type.includes('text/event-stream')) {
        // Not streamed: one chat.completion body.
        const text = await res.text();
        let json: { choices?: Array<{ message?: { content?: string | null; tool_calls?: ChatToolCall[] } }> };
        try {
          json = JSON.parse(text);
        } catch {
          throw new ModelEndpointError(
            'model_error',
            `the model endpoint answered neither SSE nor JSON: ${text.slice(0, 200)}`,
          );
        }
        const m = json.choices?.[0]?.message;
        if (!m) throw new ModelEndpointError('model_error', 'the model endpoint returned no message');
        asm.apply({
          choices: [
            {
              delta: {
                content: m.content ?? '',
                tool_calls: (m.tool_calls ?? []).map((c, index) => ({ index, id: c.id, function: c.function })),
              },
            },
          ],
        });
        const content = asm.result().content;
        if (content) onText(content);
        return asm.result();
      }
      const sse = new SseDecoder();
      const decoder = new TextDecoder();
      const handle = (data: string) => {
        if (data === '[DONE]') return;
        let chunk: ChatChunk;
        try {
          chunk = JSON.parse(data);
        } catch {
          throw new ModelEndpointError(
            'model_error',
            `the model endpoint streamed a chunk that is not JSON: ${data.slice(0, 200)}`,
          );
        }
        if (chunk.error)
          throw new ModelEndpointError(
            'model_error',
            `the model endpoint reported: ${chunk.error.message ?? 'an error'}`,
          );
        const text = asm.apply(chunk);
        if (text) onText(text);
      };
      const reader = res.body?.getReader();
      for (;;) {
        const part = reader ? await reader.read() : { done: true as const, value: undefined };
        if (part.done) break;
        for (const d of sse.push(decoder.decode(part.value, { stream: true }))) handle(d);
      }
      for (const d of sse.push(decoder.decode())) handle(d);
      for (const d of sse.end()) handle(d);
      return asm.result();
    } catch (e) {
      throw failed(e);
    }
  };
}
