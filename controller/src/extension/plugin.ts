import type { DeliveryMethod } from './deliveryMethod.js';
import type { NotificationProvider } from './notificationProvider.js';
import type { WorkloadKind } from './workloadKind.js';

/** Delivery methods by `spec.delivery.method`. */
export type DeliveryMethods = ReadonlyMap<string, DeliveryMethod>;

/** Workload kinds by Application `spec.workloads[].kind`. */
export type WorkloadKinds = ReadonlyMap<string, WorkloadKind>;

/**
 * Extensions a platform team adds to the controller from outside its package (see PLUGINS.md):
 * pass them to `startController(config, { plugins })`. Names must be unique across all plugins and
 * the built-ins; the controller refuses to start otherwise.
 */
export interface ControllerPlugin {
  /** Unique among the plugins of one controller; errors and logs name it. */
  name: string;
  /** Ways to write the desired state, by Environment `spec.delivery.method`. */
  deliveryMethods?: readonly DeliveryMethod[];
  /** Rollout judges, by Application `spec.workloads[].kind`. */
  workloadKinds?: readonly WorkloadKind[];
  /** Where release events go, besides the Notification resources (webhooks). */
  notificationProviders?: readonly NotificationProvider[];
}

/** The built-ins and every plugin's extensions, checked and by name. */
export interface ControllerExtensions {
  deliveryMethods: DeliveryMethods;
  workloadKinds: WorkloadKinds;
  /** The plugins' providers (the built-in webhook provider needs the running controller: the runtime adds it). */
  notificationProviders: readonly NotificationProvider[];
}

/** A plugin the controller cannot load; the message names the plugin and the problem. */
export class PluginError extends Error {
  override name = 'PluginError';
}
