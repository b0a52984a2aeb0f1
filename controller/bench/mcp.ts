/**
 * Benchmark (a script, not a test): `npx tsx controller/bench/mcp.ts [--apps 500]`.
 * p50/p95 latency of the MCP `list` and `diff` tools with 500 Applications x 3 Environments cached,
 * over the in-memory transport (server cost only) and over Streamable HTTP (JSON-RPC, SSE framing,
 * bearer auth with a static token). The cached workloads do not change during the run, so version
 * readers keep their answers between calls, as over the live cache between two changes.
 * Authorisation is an allow-all stub here: in production each distinct (caller, verb, resource,
 * namespace) costs one SubjectAccessReview, cached for 5 s.
 */
import type { Application, Environment, PromotionFlow } from '@kpromo/api';
import * as k8s from '@kubernetes/client-node';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Access } from '../src/api/access.js';
import type { ApiContext } from '../src/api/context.js';
import type { Caller } from '../src/auth/identity.js';
import type { Workload } from '../src/kube/cacheView.js';
import { ChangeLoggingCache } from '../src/kube/memoryCache.js';
import { KubeRest } from '../src/kube/rest.js';
import { McpConfigSchema } from '../src/mcp/config.js';
import { startMcpHttp } from '../src/mcp/http.js';
import { createMcpServer } from '../src/mcp/server.js';
import { createLogger } from '../src/observability/logger.js';

// `-- --apps 5000`: the size of the scale benchmark (controller/bench/scale.ts) without its clusters.
const APPS = Number(process.argv[process.argv.indexOf('--apps') + 1]) || 500;
const ENVS = ['dev', 'stable', 'prod'];
const ITER = Number(process.env.BENCH_ITER ?? 200);
const digest = (i: number, e: number) => `sha256:${(i * 7919 + e).toString(16).padStart(64, '0')}`;

// Nothing changes during the run: its change log lets version readers keep their answers between calls.
const cache = new ChangeLoggingCache();
for (const e of ENVS)
  cache.envs.push({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'Environment',
    metadata: { name: e, namespace: 'bench' },
    spec: {
      cluster: { context: e },
      namespace: 'apps',
      registry: { host: `reg-${e}.local:5000`, insecure: true },
      delivery: { method: 'patch' },
    },
  } as Environment);
cache.flowList.push({
  apiVersion: 'promotions.kpromo.dev/v1alpha1',
  kind: 'PromotionFlow',
  metadata: { name: 'main', namespace: 'bench' },
  spec: { stages: ENVS.map((environment) => ({ environment })) },
} as PromotionFlow);
for (let i = 0; i < APPS; i++) {
  const name = `app-${String(i).padStart(3, '0')}`;
  cache.apps.push({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: 'bench', labels: { tier: i % 3 ? 'web' : 'batch' } },
    spec: {
      owner: `team-${i % 20}`,
      image: { repository: `shop/${name}` },
      workloads: [{ kind: 'Deployment', name }],
    },
  } as Application);
  ENVS.forEach((e, ei) => {
    const w: Workload = {
      kind: 'Deployment',
      metadata: { name, generation: 2 },
      spec: {
        replicas: 2,
        template: {
          spec: { containers: [{ name: 'main', image: `reg/shop/${name}:v1.${3 - ei}.0@${digest(i, ei)}` }] },
        },
      },
      status: { observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 },
    };
    cache.workloads.set(`${e}/Deployment/${name}`, w);
  });
}

const none = new KubeRest(new k8s.KubeConfig(), 'none');
const log = createLogger({ level: 'silent' });
const allow = { check: async () => ({ allowed: true, reason: 'bench' }) };
const ctx: ApiContext = { cache, control: none, access: new Access(allow), namespace: 'bench' };
const caller: Caller = { username: 'bench', groups: [], source: 'static' };

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function measure(client: Client, label: string, name: string, args: Record<string, unknown>) {
  for (let i = 0; i < 10; i++) await client.callTool({ name, arguments: args }); // warm-up
  const t: number[] = [];
  for (let i = 0; i < ITER; i++) {
    const t0 = performance.now();
    const r = await client.callTool({ name, arguments: args });
    t.push(performance.now() - t0);
    if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.content)}`);
  }
  console.log(
    `${label.padEnd(10)} ${`${name} ${JSON.stringify(args)}`.padEnd(60)} p50 ${pct(t, 50).toFixed(2)} ms  p95 ${pct(t, 95).toFixed(2)} ms`,
  );
}

const cases: Array<[string, Record<string, unknown>]> = [
  ['list', { pageSize: 50 }],
  ['list', { pageSize: 200 }],
  ['list', { team: 'team-3', labels: { tier: 'web' }, environment: 'prod', health: 'Healthy' }],
  ['diff', { from: 'dev', to: 'stable' }],
  ['diff', { from: 'stable', to: 'prod', teams: ['team-1'] }],
];

console.log(`${APPS} applications x ${ENVS.length} environments cached, ${ITER} calls each\n`);

{
  const server = createMcpServer(ctx, { write: false, log, localCaller: caller });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(b);
  for (const [n, args] of cases) await measure(client, 'in-memory', n, args);
  await client.close();
}
{
  const token = 'bench-token-0123456789abcdef';
  const http = await startMcpHttp(ctx, McpConfigSchema.parse({ enabled: true, port: 0 }), {
    log,
    auth: {
      authorizer: allow,
      authenticator: {
        authenticate: async (t: string) => {
          if (t !== token) throw new Error('bad token');
          return caller;
        },
      },
    },
  });
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(http.url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  for (const [n, args] of cases) await measure(client, 'http', n, args);
  await client.close();
  await http.close();
}
