/**
 * The Port stand-in as a child process for bench/exporter.ts and bench/exporterVsPort.ts, so its
 * spec validation does not count towards the exporter's RSS. Talks to the parent over IPC: reports
 * its URL, takes seeds (blueprints, an integration), answers stats requests, and reports when an
 * entity whose title starts with "lat-", or whose `labels` property has a `bench-lat` label, lands
 * (latency probe).
 */
import { PortStandIn } from '@kpromo/test-harness/port';

// Wrapped in main(): the root package is CommonJS, where top-level await is unavailable.
async function main(): Promise<void> {
  const port = new PortStandIn();
  const url = await port.start();
  const origSet = Map.prototype.set;
  // Observe entity writes without changing the stand-in: wrap each blueprint's map.
  const watched = new WeakSet<object>();
  const entitiesOf = port.entitiesOf.bind(port);
  port.entitiesOf = (bp: string) => {
    const m = entitiesOf(bp);
    if (!watched.has(m)) {
      watched.add(m);
      m.set = function (k, v) {
        if (typeof v.title === 'string' && v.title.startsWith('lat-'))
          process.send?.({ type: 'landed', title: v.title, at: Date.now() });
        const label = (v.properties as { labels?: Record<string, unknown> } | undefined)?.labels?.['bench-lat'];
        if (typeof label === 'string') process.send?.({ type: 'landed', title: label, at: Date.now() });
        return origSet.call(this, k, v);
      };
    }
    return m;
  };
  type ParentMessage = {
    type: string;
    blueprints?: Array<{ identifier: string } & Record<string, unknown>>;
    integration?: { installationId: string } & Record<string, unknown>;
  };
  process.on('message', (msg: ParentMessage) => {
    if (msg.type === 'seed') {
      for (const bp of msg.blueprints ?? []) port.blueprints.set(bp.identifier, bp);
      if (msg.integration) port.integrations.set(msg.integration.installationId, msg.integration);
      process.send?.({ type: 'seeded' });
    }
    if (msg.type === 'stats') {
      const counts: Record<string, number> = {};
      for (const [bp, m] of port.entities) counts[bp] = m.size;
      counts.__bulk = port.callCount(/^POST .*\/entities\/bulk$/);
      const routes: Record<string, number> = {};
      for (const c of port.calls) routes[`${c.method} ${c.path}`] = (routes[`${c.method} ${c.path}`] ?? 0) + 1;
      process.send?.({
        type: 'stats',
        calls: port.callCount(),
        counts,
        routes,
        violations: [...new Set(port.violations)].slice(0, 8),
        violationCount: port.violations.length,
      });
    }
    if (msg.type === 'stop') void port.stop().then(() => process.exit(0));
  });
  process.send?.({ type: 'ready', url, clientId: port.clientId, clientSecret: port.clientSecret });
}

void main();
