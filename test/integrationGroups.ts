/**
 * Integration files that change what every other file sees, or that measure timing, and so run
 * alone, after everything else: they restart an apiserver, delete a CRD, install the chart's
 * cluster-wide admission policies and CRDs, create and delete CRDs
 * that discovery picks up, or hold Leases against the clock.
 */
export const EXCLUSIVE_INTEGRATION_FILES = [
  'controller/test/apiserverRestart.int.test.ts', // restarts the stable kube-apiserver
  'controller/test/delivery.int.test.ts', // deletes the HelmRelease CRD on stable
  'controller/test/helmRollout.int.test.ts', // deletes the HelmRelease CRD on prod
  'controller/test/splitBrain.int.test.ts', // Leases against the clock
  'controller/test/sharding.int.test.ts', // Leases against the clock
  'controller/test/flood.int.test.ts', // loads the controller on purpose
  'test/helm.int.test.ts', // helm install: CRDs and admission policies bound cluster-wide on stable
  // A second control plane on ports found free, not reserved: alone, so that it never races the
  // seven-cluster one of controller/test/fleet.int.test.ts (which runs beside the others).
  'test/cluster/lifecycle.int.test.ts',
  'plugins/promotions-backend-module-port/test/portResources.int.test.ts', // CRDs that discovery sees
];
