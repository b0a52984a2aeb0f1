// `@kpromo/controller/adopt`: discovery of what runs and the proposal of kpromo resources for it,
// for `kpromo adopt` and the portal's onboarding (POST /adopt), the same code everywhere. `kpromo
// adopt` opens the caller's kubeconfig with planAdoption from `@kpromo/controller/session`.
// The built-in delivery methods are what `kpromo adopt` recognises; a host with plugins passes
// loadPlugins(plugins).deliveryMethods (@kpromo/controller) instead.

export { findValuePath } from '../delivery/methods/helmRelease.js';
export { builtinDeliveryMethods } from '../delivery/registry.js';
export { discoverEnvironment } from './discover.js';
export { type AdoptionCandidate, adoptIntoFlow } from './intoFlow.js';
export {
  type AdoptionInput,
  type Finding,
  type FoundEnvironment,
  type Proposal,
  proposeAdoption,
  proposedResources,
} from './propose.js';
export { adoptReportLines, adoptYaml, resourceFileName, resourceYaml } from './render.js';
export {
  type AdoptClusters,
  type AdoptOptions,
  type AdoptTarget,
  AdoptUsageError,
  applyProposal,
  planAdoptionIn,
} from './run.js';
