import { ConfigReader } from '@backstage/config';
import { assistantLlmConfig, type LlamaServer } from '@kpromo/test-harness';
import {
  type LlmConfig,
  readLlmConfig,
} from '../../plugins/promotions-backend-module-assistant/src/assistant/config.js';
import { EVAL_TOOLS } from './run.js';

/** The CI model, as the baseline names it. */
export const CI_MODEL =
  "Gemma 3 270M Q4_K_M on llama.cpp's server (xllamacpp, test/cluster/versions.env), one thread, the assistant tests' few-shot";

/** `promotions.assistant.llm` read as the backend reads it. */
const read = (llm: object): LlmConfig => readLlmConfig(new ConfigReader({ llm }))!;

/**
 * The CI model's configuration (the assistant tests': few-shot, stop strings, temperature 0, seed
 * 42), offering the tools the evaluation needs instead of the tests' four.
 */
export function ciModelConfig(llama: LlamaServer): LlmConfig {
  return read({ ...assistantLlmConfig(llama), tools: EVAL_TOOLS });
}

/**
 * Any OpenAI-compatible endpoint as a deployment would configure it: the built-in system prompt, no
 * few-shot or stop strings (those are for small base models), temperature 0.
 */
export function endpointConfig(o: { baseUrl: string; model: string; apiKey?: string }): LlmConfig {
  return read({
    baseUrl: o.baseUrl,
    model: o.model,
    ...(o.apiKey ? { apiKey: o.apiKey } : {}),
    tools: EVAL_TOOLS,
    temperature: 0,
    maxToolRounds: 3,
    timeoutSeconds: 120,
  });
}
