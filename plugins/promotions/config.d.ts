export interface Config {
  promotions?: {
    assistant?: {
      /**
       * Deprecated and ignored: chat used to be sent from the browser to this endpoint. The model is
       * now called by the promotions backend (`promotions.assistant.llm`: baseUrl, model, apiKey), so
       * its key never reaches the browser; the Assistant page warns while this is still set.
       * @deprecated use promotions.assistant.llm in the backend's app-config
       * @visibility frontend
       */
      chatEndpoint?: string;
      /**
       * Deprecated and ignored: the model is `promotions.assistant.llm.model` (backend).
       * @deprecated use promotions.assistant.llm.model
       * @visibility frontend
       */
      model?: string;
    };
  };
}
