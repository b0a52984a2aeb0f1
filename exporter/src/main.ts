import pkg from '../package.json' with { type: 'json' };
import { loadConfig } from './config.js';
import { createLogger } from './log.js';
import { runExporter } from './run.js';

const USAGE = `Usage: kpromo-exporter [config.yaml]

Mirrors Kubernetes resources (kpromo custom resources by default, discovered CRDs, and whatever
the config maps) into Port. The config file defaults to $KPROMO_EXPORTER_CONFIG, then
./exporter.yaml; see exporter/README.md, "Configuration reference". A port-k8s-exporter
config.yaml (no \`clusters\` key) is accepted unchanged: see "From port-k8s-exporter".`;

if (process.argv.includes('--version')) {
  console.log(pkg.version);
  process.exit(0);
}
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const log = createLogger();
const path = process.argv[2] ?? process.env.KPROMO_EXPORTER_CONFIG ?? 'exporter.yaml';
try {
  const cfg = await loadConfig(path);
  const running = runExporter(cfg, log);
  void running.resync().catch((e) => log.error({ err: e }, 'initial resync failed'));
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.on(sig, () => {
      running.stop();
      process.exit(0);
    });
} catch (e) {
  console.error((e as Error).message);
  process.exit(1);
}
