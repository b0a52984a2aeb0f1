import type { DeliveryMethod } from '../../extension/deliveryMethod.js';
import { planRef } from '../../extension/deliveryMethod.js';
import { builtinWorkloadKinds } from '../../rollout/registry.js';
import { patchWorkloadImage } from '../patchWorkload.js';

/** delivery.method=patch: set the container image of the app's workloads in the Environment namespace. */
export const patchDelivery: DeliveryMethod = {
  name: 'patch',
  async deliver(c) {
    // The built-in kinds only: each says where its image lives and how to patch it (PLUGINS.md, limits).
    await patchWorkloadImage(await c.client(), c.env, c.app, c.ref, planRef(c.plan), builtinWorkloadKinds);
  },
  /**
   * Patch on each workload kind the Environment's Applications name there; create and delete for
   * kinds replaced on change (Jobs, whose template is immutable). A kind that cannot be patched fails
   * the promotion with its own reason (UnsupportedWorkloadKind), so it needs nothing.
   */
  accessNeeds: ({ env, workloadKinds }) =>
    workloadKinds.flatMap((kind) => {
      if (!kind.patch) return [];
      const { group, plural } = kind.resource;
      const verbs = kind.patch === 'recreate' ? ['create', 'delete'] : ['patch'];
      return verbs.map((verb) => ({ verb, group, resource: plural, namespace: env.spec.namespace }));
    }),
  // The controller check already reports its rights in the Environment's cluster (DeliveryPermitted): no diagnose.
  /** Any workload can be patched: chosen when nothing else is seen to deliver the workloads. */
  infer: {
    evidence: 'fallback',
    by: 'kpromo patching the workloads',
    recognises: () => true,
    propose: () => ({ delivery: { method: 'patch' } }),
  },
};
