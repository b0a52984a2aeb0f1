// The extension contract, published as `@kpromo/controller/plugin`: what a plugin (PLUGINS.md)
// implements and may use, and nothing of the controller's internals. The built-ins implement the same
// interfaces (delivery/methods, rollout/kinds, notify/notifier.ts, verification/providers) and are
// registered like a plugin's (reconcile/plugins.ts); reconcile/ consumes them through the registries.
// This folder imports only low-level modules (kube, credentials, oci, net), never delivery, rollout,
// notify, verification or reconcile: `yarn deps:check` fails on an import cycle.
export type {
  AdoptedContainer,
  AdoptKind,
  DeliveryInference,
  FoundEnvironment,
  FoundHelmRelease,
  FoundImagePolicy,
  FoundKustomization,
  FoundWorkload,
  InferContext,
  InferredDelivery,
  UnreadReference,
} from './adoption.js';
export type { CheckContext, CheckProvider, CheckVars, CheckWindow, Measurement } from './checkProvider.js';
export { gitDeliveryAuth, registryAuth, registryEndpoint } from './credentials.js';
export type {
  AccessNeed,
  AccessNeedsContext,
  CommitImageChangeRequest,
  DeliveryContext,
  DeliveryDiagnosis,
  DeliveryMethod,
  DeliveryResult,
  DeliveryVerdict,
  DeliveryVerdictContext,
  DiagnoseContext,
} from './deliveryMethod.js';
export { PermanentAppError } from './errors.js';
export type { NotificationProvider, ReleaseEvent } from './notificationProvider.js';
export {
  type CheckProviders,
  type ControllerExtensions,
  type ControllerPlugin,
  type DeliveryMethods,
  PluginError,
  type WorkloadKinds,
} from './plugin.js';
export { type Registry, UnknownExtensionError } from './registry.js';
export {
  type ConfirmContext,
  defineWorkloadKind,
  type KubeObject,
  type PatchStyle,
  type WorkloadKind,
  type WorkloadReadiness,
} from './workloadKind.js';
