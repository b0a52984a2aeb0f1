// Flux in the test harness by hand: `tsx test/flux/cli.ts build|start|stop`.
// build: the binaries and CRDs (test/flux/build.sh); start: against the dev cluster of the harness
// kubeconfig (reused when running); stop: regardless of leases (e.g. after an interrupted run).
import { defaultKubeconfigPath } from '../cluster/paths.js';
import { ensureFluxBinaries, fluxStateDir, releaseFlux, startFlux } from './flux.js';

const log = (s: string) => console.log(s);
const cmd = process.argv[2];
if (cmd === 'build') {
  const b = ensureFluxBinaries(log);
  log(`${b.sourceController}\n${b.kustomizeController}`);
} else if (cmd === 'start') {
  const t0 = Date.now();
  const f = await startFlux({ kubeconfig: process.env.KUBECONFIG ?? defaultKubeconfigPath(), log });
  log(
    `Flux ${f.started ? 'started' : 'already running'} (${Date.now() - t0} ms); artifacts at ${f.sourceUrl}; logs in ${fluxStateDir()}`,
  );
} else if (cmd === 'stop') {
  log((await releaseFlux(undefined, { force: true })) ? 'Flux stopped' : 'Flux was not running');
} else {
  console.error('usage: tsx test/flux/cli.ts build|start|stop');
  process.exit(2);
}
