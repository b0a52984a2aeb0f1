// Config schema of the assistant module (the rest of `promotions:` belongs to the promotions backend;
// src/assistant/config.ts reads this part). Everything here stays on the backend: nothing reaches the frontend.
export interface Config {
  promotions?: {
    assistant?: {
      /**
       * The assistant's model: an OpenAI-compatible chat endpoint (OpenAI, Azure OpenAI, Ollama, vLLM,
       * llama.cpp's llama-server), called by the backend only. Unset: the portal offers tool forms only.
       */
      llm?: {
        /** POST {baseUrl}/chat/completions, e.g. https://api.openai.com/v1 or http://localhost:11434/v1 (Ollama). */
        baseUrl: string;
        /** Model (Azure OpenAI: any name; the deployment is in baseUrl). */
        model: string;
        /**
         * The endpoint's key. Sent as `Authorization: Bearer` (or `api-key` for Azure), never to the browser.
         * @visibility secret
         */
        apiKey?: string;
        /** `authorization` (default) or `api-key` (Azure OpenAI). */
        apiKeyHeader?: 'authorization' | 'api-key';
        /** Azure OpenAI's api-version query parameter, e.g. 2024-10-21. */
        apiVersion?: string;
        /** Stop strings, e.g. ["</tool_call>"] for small models that write tool calls as text. */
        stop?: string[];
        /** Replaces the built-in system prompt. */
        systemPrompt?: string;
        /** Worked exchanges placed before every conversation. */
        fewShot?: Array<{
          role: 'user' | 'assistant' | 'tool';
          content?: string;
          /** An assistant message's tool call; the next message (role tool) is its result. */
          toolCall?: { name: string; arguments?: { [key: string]: unknown } };
        }>;
        /** Offer only these MCP tools to the model (default: every tool the signed-in user may use). */
        tools?: string[];
        /** Rounds of tool calls per request before the loop stops (default 5). */
        maxToolRounds?: number;
        /** Per model request (default 60). */
        timeoutSeconds?: number;
        temperature?: number;
        seed?: number;
        maxTokens?: number;
        /** Tool output handed to the model is cut to this many characters (default 4000). */
        maxToolResultChars?: number;
      };
    };
  };
}
