/**
 * The exporter under test as its own process for bench/exporter.ts, so peak RSS is the
 * exporter's alone (not the harness creating thousands of objects). Config arrives over IPC.
 */
import { createLogger, parseConfig, runExporter } from '@kpromo/exporter';

let peakRss = 0;
setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 50).unref();

process.on('message', async (msg: { type: string; config?: unknown; ns?: string }) => {
  if (msg.type === 'start') {
    const cfg = await parseConfig(msg.config);
    for (const r of cfg.resources) r.selector = { query: `.metadata.namespace == "${msg.ns}"` };
    runExporter(cfg, createLogger('warn'));
    process.send?.({ type: 'started' });
  }
  if (msg.type === 'rss') {
    const cpu = process.cpuUsage();
    process.send?.({
      type: 'rss',
      peakRss: Math.max(peakRss, process.memoryUsage().rss),
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
    });
  }
  if (msg.type === 'stop') process.exit(0);
});
process.send?.({ type: 'exporter-ready', rss: process.memoryUsage().rss });
