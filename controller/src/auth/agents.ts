import { z } from 'zod';
import type { Caller } from './identity.js';

// Which callers are agents (docs/agents.md, "Agents as principals"). An agent is marked by the
// platform (this config), or by its token: a JWT with an RFC 8693 `act` claim is a delegation, `sub`
// the person and `act.sub` the agent acting for them, whatever this config says.

const NO_CONTROL = /^[^\p{Cc}]+$/u;

/** `auth.agents`: identities (Kubernetes user names, as authenticated) that are agents, and their names. */
export const AgentsConfigSchema = z
  .object({
    identities: z
      .record(z.string().min(1).max(253).regex(NO_CONTROL), z.string().min(1).max(253).regex(NO_CONTROL))
      .default({})
      .describe(
        'Identity -> agent name, e.g. "system:serviceaccount:bots:release-bot": release-bot (an OAuth client: its mapped username)',
      ),
  })
  .strict();

export type AgentsConfig = z.infer<typeof AgentsConfigSchema>;

/** Pure: the agent name of an identity, or undefined when the config does not mark it. */
export function agentName(username: string, cfg: AgentsConfig | undefined): string | undefined {
  return cfg && Object.hasOwn(cfg.identities, username) ? cfg.identities[username] : undefined;
}

/**
 * Pure: the caller with its agent marking. A delegation (`agent` from the token's act claim) keeps
 * the person as the caller and names the agent by the config, else by its identity; an identity the
 * config marks is an agent acting alone. Anyone else is a person.
 */
export function markAgent(caller: Caller, cfg: AgentsConfig | undefined): Caller {
  if (caller.agent)
    return { ...caller, agent: { ...caller.agent, name: agentName(caller.agent.username, cfg) ?? caller.agent.name } };
  const name = agentName(caller.username, cfg);
  return name ? { ...caller, agent: { name, username: caller.username } } : caller;
}
