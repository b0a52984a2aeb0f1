import type { Environment } from '@kpromo/api';
import type { DeliveryMethod } from '../extension/deliveryMethod.js';
import type { DeliveryMethods } from '../extension/plugin.js';
import { registryOf } from '../extension/registry.js';
import { gitDelivery } from './methods/git.js';
import { helmReleaseDelivery } from './methods/helmRelease.js';
import { imagePolicyDelivery } from './methods/imagePolicy.js';
import { patchDelivery } from './methods/patch.js';

/**
 * The methods the Environment CRD names (its `spec.delivery.method` enum). The order is adoption's
 * tie-break (DeliveryInference): helmRelease before git, so a workload helm-controller renders is
 * the HelmRelease's, whichever Kustomization applied the HelmRelease.
 */
export const BUILTIN_DELIVERY_METHODS: readonly DeliveryMethod[] = [
  patchDelivery,
  helmReleaseDelivery,
  gitDelivery,
  imagePolicyDelivery,
];

export const builtinDeliveryMethods: DeliveryMethods = registryOf(
  'delivery method',
  BUILTIN_DELIVERY_METHODS,
  (m) => m.name,
);

/** Pure: why an Environment's delivery cannot be used (unknown method, missing configuration), or undefined. */
export function deliveryProblem(methods: DeliveryMethods, env: Environment): string | undefined {
  const name = env.spec.delivery.method;
  const m = methods.get(name);
  if (!m) return `delivery.method ${methods.unknown(name)}`;
  return m.validate?.(env);
}
