import { coreServices, createBackendModule } from '@backstage/backend-plugin-api';
import { AuthorizeResult, type PolicyDecision } from '@backstage/plugin-permission-common';
import type { PermissionPolicy, PolicyQuery, PolicyQueryUser } from '@backstage/plugin-permission-node';
import { policyExtensionPoint } from '@backstage/plugin-permission-node/alpha';

const WRITE = new Set([
  'promotion.plan.create',
  'promotion.plan.approve',
  'promotion.continue',
  'promotion.rollback',
  'promotion.line.stop',
  'promotion.adopt',
]);

/**
 * Demo policy: everyone may read and act, except the users in `portal.readOnlyUsers`, who may only
 * read promotions (the UI then hides Create/Approve/Roll back/Stop the line for them).
 */
export class PortalPolicy implements PermissionPolicy {
  constructor(private readonly readOnlyUsers: Set<string>) {}

  async handle(request: PolicyQuery, user?: PolicyQueryUser): Promise<PolicyDecision> {
    const ref = user?.info.userEntityRef;
    if (ref && this.readOnlyUsers.has(ref) && WRITE.has(request.permission.name)) {
      return { result: AuthorizeResult.DENY };
    }
    return { result: AuthorizeResult.ALLOW };
  }
}

export default createBackendModule({
  pluginId: 'permission',
  moduleId: 'kpromo-portal-policy',
  register(reg) {
    reg.registerInit({
      deps: { policy: policyExtensionPoint, config: coreServices.rootConfig },
      async init({ policy, config }) {
        policy.setPolicy(new PortalPolicy(new Set(config.getOptionalStringArray('portal.readOnlyUsers') ?? [])));
      },
    });
  },
});
