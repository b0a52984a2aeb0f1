// `@kpromo/controller/doctor`: checks of an installation, for `kpromo doctor` (whose session,
// openDoctorContext, is opened by `@kpromo/controller/session`).
// The built-in delivery methods are what `kpromo doctor` checks Environments with; a host with
// plugins passes loadPlugins(plugins).deliveryMethods (@kpromo/controller) instead.
export { builtinDeliveryMethods } from '../delivery/registry.js';
export {
  ADMISSION_POLICIES,
  CONTROLLER_IDENTITY_LABEL,
  identityParamRefs,
  judgeAdmission,
  judgeControllerIdentity,
} from './admission.js';
export { type CheckResult, type DoctorCheck, type DoctorContext, DoctorUsageError } from './check.js';
export { DOCTOR_CHECKS, runDoctor } from './checks.js';
export { selectorMatches } from './namespaces.js';
export { findWildcardHolders, GUARDED_VERBS, judgeWildcardHolders, wildcardGrants } from './rbacWildcards.js';
