// `@kpromo/controller/adopt`: discovery of what runs and the proposal of kpromo resources for it,
// for `kpromo adopt` (and later the portal's onboarding), the same code everywhere.
export { discoverEnvironment } from './discover.js';
export {
  type AdoptionInput,
  type Finding,
  type FoundEnvironment,
  findValuePath,
  type Proposal,
  proposeAdoption,
} from './propose.js';
export {
  type AdoptOptions,
  type AdoptTarget,
  AdoptUsageError,
  applyProposal,
  planAdoption,
  proposedResources,
} from './run.js';
