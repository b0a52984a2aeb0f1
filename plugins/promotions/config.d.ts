export interface Config {
  promotions?: {
    assistant?: {
      /**
       * Base URL of an OpenAI-compatible API (POST {chatEndpoint}/chat/completions), e.g. a Backstage proxy
       * endpoint such as /api/proxy/llm. Requests are sent with the user's Backstage token.
       * @visibility frontend
       */
      chatEndpoint?: string;
      /**
       * Model name sent to the chat endpoint.
       * @visibility frontend
       */
      model?: string;
    };
  };
}
