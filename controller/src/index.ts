// `@kpromo/controller`: the host API, for a process that runs the controller (kpromo-controller
// itself, a platform team's own entry point with plugins as in PLUGINS.md, the demo, tests): read
// the config, start the controller. Plugins implement `@kpromo/controller/plugin`; local front ends
// open their session with `@kpromo/controller/session` and call `@kpromo/controller/api`.
export { type Config, ConfigError, loadConfig } from './config.js';
// Where a config puts the control cluster (in a pod or not), as startController decides it.
export { type ControlClusterChoice, chooseControlCluster } from './kube/controlCluster.js';
export { type Running, type StartOptions, startController } from './runtime.js';
