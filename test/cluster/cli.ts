// `yarn cluster <build|build-all|start|status|stop|clean>`: manage the local control plane by hand.
// build: the control plane's binaries; build-all [--jobs N] [id...]: every upstream component the tests
// run (or those named), N at a time (default 1).
import { availableParallelism } from 'node:os';
import { buildComponents, buildComponentsInParallel } from './components.js';
import { cleanClusters, clustersStatus, ensureClusters, stopClusters } from './controlPlane.js';
import { ensureBinaries } from './paths.js';

const cmd = process.argv[2] ?? 'start';
const log = (m: string) => console.log(m);

async function main() {
  switch (cmd) {
    case 'build':
      console.log(ensureBinaries(log));
      break;
    case 'build-all': {
      const args = process.argv.slice(3);
      const j = args.indexOf('--jobs');
      const jobs = j < 0 ? 1 : args[j + 1] === 'cores' ? availableParallelism() : Number(args[j + 1]);
      if (j >= 0) args.splice(j, 2);
      if (!Number.isInteger(jobs) || jobs < 1) throw new Error('build-all --jobs takes a positive number or "cores"');
      const only = args.length ? args : undefined;
      if (jobs === 1) buildComponents(log, only);
      else if (!(await buildComponentsInParallel(log, jobs, only))) process.exit(1);
      break;
    }
    case 'start': {
      const t = Date.now();
      const cp = await ensureClusters({ log });
      for (const c of cp.clusters) console.log(`${c.name}\t${c.server}`);
      console.log(`ready in ${((Date.now() - t) / 1000).toFixed(1)}s; export KUBECONFIG=${cp.kubeconfigPath}`);
      break;
    }
    case 'status':
      for (const s of clustersStatus()) console.log(`${s.running ? 'running' : 'stopped'}\t${s.process}`);
      break;
    case 'stop':
      console.log(`stopped ${await stopClusters()} processes`);
      break;
    case 'clean':
      await cleanClusters();
      console.log('removed all local cluster state');
      break;
    default:
      console.error(`unknown command "${cmd}"; use build, build-all, start, status, stop or clean`);
      process.exit(2);
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(1);
});
