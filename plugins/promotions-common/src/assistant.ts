/**
 * Wire types of the assistant's chat route (POST /api/promotions/assistant/chat), shared by the
 * backend's chat loop and the portal. The browser holds the conversation (OpenAI-style messages
 * without the system prompt, which stays on the server) and sends it with each request; the answer
 * is NDJSON, one {@link AssistantEvent} a line.
 */

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** The user's answer to a pending tool call: the token the server issued for exactly that call. */
export interface ChatConfirmation {
  id: string;
  token: string;
  approve: boolean;
}

export interface ChatRequestBody {
  messages: ChatMessage[];
  confirm?: ChatConfirmation;
}

export interface AssistantStatus {
  /** Whether promotions.assistant.llm is configured (the chat route answers 503 otherwise). */
  enabled: boolean;
  model?: string;
  maxToolRounds?: number;
}

export type ToolCallSafety = 'read' | 'write' | 'destructive';

export type AssistantEvent =
  /** Streamed answer text. */
  | { type: 'text'; delta: string }
  /** The model called a tool the loop runs now (read-only tools, or one the user just confirmed). */
  | { type: 'tool_call'; id: string; name: string; arguments: Record<string, unknown>; safety: ToolCallSafety }
  | {
      type: 'tool_result';
      id: string;
      name: string;
      isError: boolean;
      /** The tool's text output, shortened. */
      summary: string;
      structuredContent?: unknown;
    }
  /** A call that changes something: nothing ran; the user confirms (or declines) it with `token`. */
  | {
      type: 'pending';
      id: string;
      name: string;
      title?: string;
      arguments: Record<string, unknown>;
      safety: ToolCallSafety;
      token: string;
      expiresAt: string;
    }
  /** The end of a request: the conversation to send back next time. */
  | { type: 'done'; reason: 'answered' | 'pending' | 'stopped'; messages: ChatMessage[] }
  | { type: 'error'; code: AssistantErrorCode; message: string };

export type AssistantErrorCode =
  | 'model_unauthorized'
  | 'model_unreachable'
  | 'model_timeout'
  | 'model_error'
  | 'malformed_tool_call'
  | 'max_rounds'
  | 'tools_unavailable'
  | 'confirmation_invalid';
