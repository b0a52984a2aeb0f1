import type { LlamaServer } from './llamaServer.js';

/**
 * What makes Gemma 3 270M (a base model) call kpromo's tools through llama-server: worked exchanges
 * rendered by the same template (other apps, plans and versions than the sample release's, so an
 * answer copied from them would be wrong), stop strings, temperature 0 and a fixed seed. The tool
 * outputs imitate the controller's text format. Tuned by trial: such a model copies the nearest
 * example, so the order matters (a promotion to stable from dev last, version questions about prod
 * before it), and
 * version questions use `list` filtered to the environment, whose output holds that version only (with
 * `state`, which lists every environment, it often picked the wrong one). Shared by the backend and
 * portal assistant tests.
 */
export const ASSISTANT_FEW_SHOT = [
  {
    role: 'user',
    content: 'what version of search runs in stable?',
  },
  {
    role: 'assistant',
    toolCall: {
      name: 'list',
      arguments: {
        environment: 'stable',
        name: 'search',
      },
    },
  },
  {
    role: 'tool',
    content: '1 application(s) in web\n  search [service, team-web]: stable v4.1.7 (sha256:5f4e3d2c1b0a, Healthy)',
  },
  {
    role: 'assistant',
    content: 'search runs v4.1.7 in stable.',
  },
  {
    role: 'user',
    content: 'promote the web release to prod',
  },
  {
    role: 'assistant',
    toolCall: {
      name: 'plan',
      arguments: {
        from: 'stable',
        to: 'prod',
      },
    },
  },
  {
    role: 'tool',
    content:
      'Created PromotionPlan web/web-stable-prod-7 (not approved: nothing changes until promote approves it). 1 application(s) would change from stable to prod:\n  api: prod v2.0.1 → v2.1.0 from stable',
  },
  {
    role: 'assistant',
    content: 'Created plan web-stable-prod-7: api v2.0.1 → v2.1.0 in prod. Approve it with promote.',
  },
  {
    role: 'user',
    content: 'what version of billing runs in prod?',
  },
  {
    role: 'assistant',
    toolCall: {
      name: 'list',
      arguments: {
        environment: 'prod',
        name: 'billing',
      },
    },
  },
  {
    role: 'tool',
    content: '1 application(s) in pay\n  billing [service, team-pay]: prod v7.2.1 (sha256:44aa55bb66cc, Healthy)',
  },
  {
    role: 'assistant',
    content: 'billing runs v7.2.1 in prod.',
  },
  {
    role: 'user',
    content: 'what version of ledger runs in prod?',
  },
  {
    role: 'assistant',
    toolCall: {
      name: 'list',
      arguments: {
        environment: 'prod',
        name: 'ledger',
      },
    },
  },
  {
    role: 'tool',
    content: '1 application(s) in fin\n  ledger [service, team-fin]: prod v2.8.5 (sha256:1234abcd5678, Healthy)',
  },
  {
    role: 'assistant',
    content: 'ledger runs v2.8.5 in prod.',
  },
  {
    role: 'user',
    content: 'promote the api release to stable',
  },
  {
    role: 'assistant',
    toolCall: {
      name: 'plan',
      arguments: {
        from: 'dev',
        to: 'stable',
      },
    },
  },
  {
    role: 'tool',
    content:
      'Created PromotionPlan api/api-dev-stable-2 (not approved: nothing changes until promote approves it). 1 application(s) would change from dev to stable:\n  gateway: stable v0.9.0 → v0.9.3 from dev',
  },
  {
    role: 'assistant',
    content: 'Created plan api-dev-stable-2: gateway v0.9.0 → v0.9.3 in stable. Approve it with promote.',
  },
];

/** `promotions.assistant.llm` for a test backend talking to `llama`. */
export function assistantLlmConfig(llama: LlamaServer) {
  return {
    baseUrl: llama.baseUrl,
    model: llama.model,
    apiKey: llama.apiKey,
    // </tool_call> ends a call; the others end an answer a base model would otherwise run on past.
    stop: ['</tool_call>', '<end_of_turn>', '<start_of_turn>', '<tool_response>'],
    fewShot: ASSISTANT_FEW_SHOT,
    tools: ['list', 'state', 'plan', 'promote'],
    temperature: 0,
    seed: 42,
    maxTokens: 64,
    maxToolRounds: 3,
    timeoutSeconds: 120,
  };
}
