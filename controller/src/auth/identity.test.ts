import { describe, expect, it } from 'vitest';
import type { Authorizer } from './authorizer.js';
import { type Caller, ImpersonationError, impersonate } from './identity.js';

/** A proxy whose RBAC allows impersonating everything: what is refused here is refused by kpromo itself. */
function allowAll() {
  const asked: unknown[] = [];
  const authorizer: Pick<Authorizer, 'check'> = {
    check: async (_c, a) => {
      asked.push(a);
      return { allowed: true, reason: '' };
    },
  };
  return { authorizer, asked };
}
const proxy: Caller = { username: 'backstage-backend', groups: [], source: 'static' };

describe('impersonation through the proxy headers', () => {
  it('refuses system: groups before asking RBAC, even a proxy allowed to impersonate them', async () => {
    const { authorizer, asked } = allowAll();
    const e = await impersonate(authorizer, proxy, { user: 'alice', groups: ['team-a', 'system:masters'] }).catch(
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(ImpersonationError);
    expect((e as Error).message).toBe(
      "forbidden: backstage-backend may not impersonate group system:masters: system: groups are Kubernetes' own and are never accepted in x-kpromo-groups",
    );
    expect(asked).toEqual([]);
  });

  it.each(['system:anonymous', 'system:kube-controller-manager', 'system:node:worker-1'])(
    'refuses the system user %s',
    async (user) => {
      const { authorizer } = allowAll();
      await expect(impersonate(authorizer, proxy, { user, groups: [] })).rejects.toThrow(
        `forbidden: backstage-backend may not impersonate user ${user}: system: users other than service accounts are never accepted in x-kpromo-user`,
      );
    },
  );

  it('checks a service account as serviceaccounts in its namespace, as the apiserver does', async () => {
    const { authorizer, asked } = allowAll();
    const c = await impersonate(authorizer, proxy, { user: 'system:serviceaccount:ci:deployer', groups: [] });
    expect(asked).toEqual([
      { group: '', resource: 'serviceaccounts', verb: 'impersonate', name: 'deployer', namespace: 'ci' },
    ]);
    expect(c).toMatchObject({ username: 'system:serviceaccount:ci:deployer', source: 'impersonation', via: proxy });
    const denied: Pick<Authorizer, 'check'> = { check: async () => ({ allowed: false, reason: '' }) };
    await expect(impersonate(denied, proxy, { user: 'system:serviceaccount:ci:deployer', groups: [] })).rejects.toThrow(
      'forbidden: backstage-backend may not impersonate service account ci/deployer (Kubernetes RBAC: needs verb impersonate on serviceaccounts in namespace ci, resourceName deployer)',
    );
  });

  it('people and their groups are checked as users and groups; the result is authenticated', async () => {
    const { authorizer, asked } = allowAll();
    const c = await impersonate(authorizer, proxy, { user: 'user:default/alice', groups: ['group:default/team-a'] });
    expect(asked).toEqual([
      { group: '', resource: 'users', verb: 'impersonate', name: 'user:default/alice', namespace: undefined },
      { group: '', resource: 'groups', verb: 'impersonate', name: 'group:default/team-a', namespace: undefined },
    ]);
    expect(c.groups).toEqual(['group:default/team-a', 'system:authenticated']);
  });
});
