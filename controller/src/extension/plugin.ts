import type { CheckProvider } from './checkProvider.js';
import type { DeliveryMethod } from './deliveryMethod.js';
import type { NotificationProvider } from './notificationProvider.js';
import type { Registry } from './registry.js';
import type { WorkloadKind } from './workloadKind.js';

/** Delivery methods by `spec.delivery.method`. */
export type DeliveryMethods = Registry<DeliveryMethod>;

/** Workload kinds by Application `spec.workloads[].kind`. */
export type WorkloadKinds = Registry<WorkloadKind>;

/** Verification check providers by check kind (the check field holding their settings). */
export type CheckProviders = Registry<CheckProvider>;

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
  /** How verification checks of a kind are measured, by the check field that holds their settings. */
  checkProviders?: readonly CheckProvider[];
}

/** The built-ins and every plugin's extensions, checked and by name. */
export interface ControllerExtensions {
  deliveryMethods: DeliveryMethods;
  workloadKinds: WorkloadKinds;
  /** The plugins' providers (the built-in webhook provider needs the running controller: the runtime adds it). */
  notificationProviders: Registry<NotificationProvider>;
  checkProviders: CheckProviders;
}

/** A plugin the controller cannot load; the message names the plugin and the problem. */
export class PluginError extends Error {
  override name = 'PluginError';
}
