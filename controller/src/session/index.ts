// `@kpromo/controller/session`: where local front ends open their session as the kubeconfig user,
// one way (session/kubeconfig.ts, session/local.ts): the `kpromo` CLI (withLocalApi), `kpromo adopt`
// (planAdoption) and `kpromo doctor` (openDoctorContext); `kpromo-controller mcp --stdio` runs
// session/mcpStdio.ts, which the CLI does not load.
// The controller config, for the CLI's --config (its clusterAccess).
export { loadConfig } from '../config.js';
export { planAdoption } from './adopt.js';
export { openDoctorContext } from './doctor.js';
export { type LocalApi, type LocalApiOptions, openLocalApi, withLocalApi } from './localApi.js';
