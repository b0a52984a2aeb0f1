import { type Static, Type } from '@sinclair/typebox';
import { StatusBase, StringEnum } from '../schemaHelpers.js';
import { FreezeWindow } from './policy.js';

/**
 * What an agent may do on its own. Reading is always allowed; every other operation needs a rule
 * of an AgentPolicy in the namespace that names the agent and the target environment.
 */
export const AGENT_OPERATIONS = ['plan', 'promote', 'rollback', 'stopLine'] as const;
export type AgentOperation = (typeof AGENT_OPERATIONS)[number] | 'read';

export const AgentRule = Type.Object({
  environments: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
      maxItems: 64,
      description:
        'Target Environments this rule covers (names or globs such as dev-*); every Environment when absent.',
    }),
  ),
  operations: Type.Array(
    StringEnum(AGENT_OPERATIONS, {
      description:
        'plan: create plans that wait for a person; promote: create plans into non-gated (approval: auto) stages, which run without a person; rollback: roll back a plan; stopLine: stop the line.',
    }),
    { minItems: 1, maxItems: 8 },
  ),
  maxApplicationsPerPlan: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 10_000, description: 'The most applications one plan of the agent may hold.' }),
  ),
  maxPlansPerHour: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 10_000,
      description: 'The most plans (promotions and rollbacks) the agent may create in this namespace per rolling hour.',
    }),
  ),
  windows: Type.Optional(
    Type.Array(FreezeWindow, {
      maxItems: 16,
      description:
        'When the agent may act (freeze-window syntax, every window read as an allow window): outside all of them it is refused. Always when absent.',
    }),
  ),
});

/**
 * An agent's rights in its namespace (docs/agents.md, "Agents as principals"): which operations it
 * may do alone, into which environments, how much and when. Its rights are this policy intersected
 * with Kubernetes RBAC of whoever it acts as (itself, or the person it acts for). Changing one needs
 * the verb `govern` on agentpolicies (admission kpromo-governance).
 */
export const AgentPolicySpec = Type.Object({
  agents: Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
    minItems: 1,
    maxItems: 64,
    description: 'Agent names (controller config agents.identities) this policy applies to; "*" for every agent.',
  }),
  killSwitch: Type.Optional(
    Type.Boolean({
      description:
        "Stop every agent at once: while true, every agent is refused everything but reading, in this namespace or, in the controller's line-stop namespace, everywhere. Its own agents list does not matter.",
    }),
  ),
  rules: Type.Optional(Type.Array(AgentRule, { maxItems: 64 })),
});

export const AgentPolicyStatus = Type.Object({
  ...StatusBase,
});

export type AgentRule = Static<typeof AgentRule>;
export type AgentPolicySpec = Static<typeof AgentPolicySpec>;
export type AgentPolicyStatus = Static<typeof AgentPolicyStatus>;
