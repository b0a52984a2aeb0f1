// `@kpromo/controller/api`: the API layer for local front ends (`kpromo`, `kpromo-controller`
// commands), the same functions the HTTP API and MCP call. The session they run in (as the
// kubeconfig user) is opened by `@kpromo/controller/session`.
export type { Caller } from '../auth/identity.js';
export type { ClusterAccessRule } from '../kube/clusterAccess.js';
export { KubeError } from '../kube/rest.js';
export { ConfigError } from '../util/configError.js';
export { Access, type ReleaseVerb, who } from './access.js';
export { type ApiContext, ApiError } from './context.js';
export * from './continueWave.js';
export { parseInput } from './input.js';
export * from './lineStops.js';
export * from './promotions.js';
