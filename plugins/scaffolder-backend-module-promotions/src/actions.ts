import { proposeAdoptionAction } from './actions/adoptPropose.js';
import { continuePlanAction } from './actions/planContinue.js';
import { createPlanAction } from './actions/planCreate.js';
import { promotePlanAction } from './actions/planPromote.js';
import { rollbackPlanAction } from './actions/planRollback.js';
import { releaseStatusAction } from './actions/releaseStatus.js';
import type { PromotionsBackendClient } from './client.js';

/**
 * The kpromo:* scaffolder actions. Each call goes to the promotions backend as the user who started
 * the task (`ctx.getInitiatorCredentials()`, see {@link PromotionsBackendClient}): the same
 * Backstage permission checks as the REST routes, then the controller acts as that user.
 *
 * @param o.defaultNamespace CR namespace for `kpromo:release:status` with a plan and no namespace
 *   (`promotions.controller.defaultNamespace`); the other actions leave an omitted namespace to the
 *   promotions backend.
 */
export function createPromotionsTemplateActions(o: { client: PromotionsBackendClient; defaultNamespace?: string }) {
  const { client } = o;
  return [
    createPlanAction(client),
    promotePlanAction(client),
    continuePlanAction(client),
    rollbackPlanAction(client),
    proposeAdoptionAction(client),
    releaseStatusAction(client, o.defaultNamespace),
  ];
}
