import { describe, expect, it } from 'vitest';
import { who } from '../api/access.js';
import { AgentsConfigSchema, markAgent } from './agents.js';
import { type Caller, impersonate } from './identity.js';

const cfg = AgentsConfigSchema.parse({ identities: { 'system:serviceaccount:bots:release-bot': 'release-bot' } });
const sa: Caller = { username: 'system:serviceaccount:bots:release-bot', groups: [], source: 'tokenreview' };
const alice: Caller = { username: 'alice', groups: ['team-a'], source: 'oidc' };

describe('markAgent', () => {
  it('marks an identity the config lists as an agent acting alone', () => {
    expect(markAgent(sa, cfg).agent).toEqual({ name: 'release-bot', username: sa.username });
    expect(who(markAgent(sa, cfg))).toBe(`agent release-bot (${sa.username})`);
  });

  it('leaves people alone', () => {
    expect(markAgent(alice, cfg)).toBe(alice);
    expect(markAgent(alice, undefined)).toBe(alice);
  });

  it('names a delegated agent (act claim) by the config, else by its identity, keeping the person as caller', () => {
    const delegated = { ...alice, agent: { name: sa.username, username: sa.username } };
    expect(markAgent(delegated, cfg)).toMatchObject({ username: 'alice', agent: { name: 'release-bot' } });
    expect(who(markAgent(delegated, cfg))).toBe('agent release-bot for alice');
    const unknown = { ...alice, agent: { name: 'oidc:client-9', username: 'oidc:client-9' } };
    expect(markAgent(unknown, cfg).agent).toEqual({ name: 'oidc:client-9', username: 'oidc:client-9' });
  });

  it('an own-key lookup: an identity named like an Object property is nobody', () => {
    expect(markAgent({ ...alice, username: 'constructor' }, cfg).agent).toBeUndefined();
  });

  it('an agent acting through x-kpromo-user (a portal session) stays an agent, for that person', async () => {
    const allow = { check: async () => ({ allowed: true }) };
    const r = await impersonate(allow, markAgent(sa, cfg), { user: 'alice', groups: [] });
    expect(r).toMatchObject({ username: 'alice', agent: { name: 'release-bot', username: sa.username } });
    expect(who(r)).toBe('agent release-bot for alice');
  });
});
