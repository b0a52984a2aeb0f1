export * from './cluster/controlPlane.js';
export { defaultKubeconfigPath, ensureBinaries, stateDir } from './cluster/paths.js';
export * from './git/gitRepo.js';
export * from './kube.js';
export * from './manifests.js';
export * from './registry/faultProxy.js';
export * from './registry/pushImage.js';
export * from './registry/registry.js';
export * from './registry/tokenAuth.js';
