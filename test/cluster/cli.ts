// `yarn cluster <build|build-all|start|status|stop|clean>`: manage the local control plane by hand.
// build: the control plane's binaries; build-all [id...]: every upstream component the tests run (or those named).
import { buildComponents } from './components.js';
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
      const only = process.argv.slice(3);
      buildComponents(log, only.length ? only : undefined);
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
