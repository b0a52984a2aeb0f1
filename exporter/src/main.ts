#!/usr/bin/env -S npx tsx
import { loadConfig } from './config.js';
import { createLogger } from './log.js';
import { runExporter } from './run.js';

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
