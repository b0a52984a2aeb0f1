// Every key of the controller config (controller/src/config.ts ConfigSchema) can be set through the
// Helm chart's `config.*` values, or this file says why the chart sets it itself or leaves it out.
// The chart is rendered with real helm (`helm template`, no cluster) from values that set every
// key to something other than the controller's default: a key the schema gains fails here until
// values.yaml, values.schema.json, _helpers.tpl's kpromo.config and the values below carry it.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual, promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigSchema, loadConfig } from '../controller/src/config.js';
import { needComponents } from './cluster/need.js';
import { ensureHelm, REPO_ROOT } from './cluster/paths.js';

await needComponents('helm');

const CHART = join(REPO_ROOT, 'deploy/helm/kpromo');
type Tree = Record<string, unknown>;

/** Set through `config.<same path>` to something other than the controller's default. */
const VALUES: Tree = {
  namespaces: ['shop', 'team-b'],
  defaultNamespace: 'shop',
  lineStopNamespace: 'shop',
  orgPolicyNamespace: 'team-b',
  lineStopAlerts: { label: 'stop_the_line', liftOnResolve: true },
  workers: 8,
  kubeClient: { qps: 20, burst: 40 },
  logLevel: 'debug',
  server: { port: 9080 },
  auth: {
    staticTokens: { existingSecret: 'api-tokens', key: 'tokens.yaml', tokens: [] },
    tokenReview: false,
    tokenAudiences: ['kpromo-prod'],
    jwt: [
      {
        issuer: { url: 'https://login.example.com', audiences: ['kpromo'] },
        claimMappings: { username: { claim: 'email' } },
      },
    ],
    anonymousMetrics: true,
    perSource: { qps: 5, burst: 10 },
    tokenReviews: { maxInFlight: 2, maxQueued: 8, maxWaitMs: 500 },
    reviewClient: { qps: 20, burst: 30 },
    tokenCache: { ttlSeconds: 60, refusedTtlSeconds: 5, size: 100 },
    refusalLog: { lines: 3, intervalSeconds: 30 },
    agents: { identities: { 'system:serviceaccount:bots:release-bot': 'release-bot' } },
  },
  leaderElection: { enabled: false, leaseDurationSeconds: 30, renewIntervalMs: 2000, renewDeadlineMs: 10000 },
  mcp: {
    enabled: true,
    port: 9090,
    path: '/agents',
    allowedHosts: ['kpromo.example.com'],
    allowedOrigins: ['https://portal.example.com'],
    write: true,
    maxSessions: 50,
    maxSessionsPerCaller: 5,
    sessionIdleSeconds: 600,
    oauth: {
      authorizationServers: ['https://login.example.com'],
      resource: 'https://kpromo.example.com/agents',
      scopesSupported: ['kpromo'],
      resourceName: 'kpromo-prod',
      resourceDocumentation: 'https://docs.example.com/kpromo',
    },
  },
  tracing: { otlpEndpoint: 'http://otel-collector.observability:4318' },
  egress: { allowedCidrs: ['10.96.0.0/12'] },
  clusterAccess: [
    { namespaces: ['shop'], contexts: ['prod'], kubeconfigSecrets: [], inCluster: false, targetNamespaces: ['shop'] },
  ],
  supplyChain: {
    trustedKeys: [{ name: 'build', secret: 'kpromo-build-key', key: 'cosign.pub', namespaces: ['shop'] }],
    signingKeys: [{ name: 'promotion', secret: 'kpromo-promotion-key', key: 'key.pem', namespaces: ['shop'] }],
  },
  persons: {
    identities: { 'user:default/alice': 'alice@example.com' },
    prefixes: [{ prefix: 'port:', person: '{rest}' }],
  },
  planURL: 'https://backstage.example.com/promotions/{namespace}/{name}',
  kubeconfig: { existingSecret: 'kpromo-clusters', key: 'kubeconfig', context: '' },
  resourceKinds: ['widgets.example.com'],
  maxAttempts: 7,
  shutdownGraceSeconds: 40,
};

/** A shard excludes `namespaces` (and a lineStopNamespace among them): rendered on its own. */
const SHARD_VALUES: Tree = {
  ...VALUES,
  namespaces: [],
  lineStopNamespace: '',
  orgPolicyNamespace: '',
  shard: { name: 'green', namespaceSelector: 'team=green' },
};

/** Keys the chart renders from the release or from other values, with the value it renders. */
const SET_BY_THE_CHART: Record<string, { value: unknown; why: string }> = {
  'server.host': { value: '0.0.0.0', why: 'the pod serves its Service' },
  'mcp.host': { value: '0.0.0.0', why: 'the pod serves its Service' },
  'leaderElection.namespace': { value: 'kpromo', why: 'the Lease lives in the release namespace' },
  'leaderElection.name': { value: 'kpromo-controller', why: 'the Lease is named after the release' },
  'supplyChain.namespace': { value: 'kpromo', why: 'the key Secrets live in the release namespace' },
  'auth.staticTokensFile': {
    value: '/etc/kpromo-tokens/tokens.yaml',
    why: 'config.auth.staticTokens names the Secret; the chart mounts it',
  },
  kubeconfig: {
    value: '/etc/kpromo-kubeconfig/kubeconfig',
    why: 'config.kubeconfig.existingSecret names the Secret; the chart mounts it',
  },
  'controlCluster.inCluster': {
    value: true,
    why: 'with a mounted kubeconfig the control cluster is still the pod’s own (config.kubeconfig.existingSecret)',
  },
};

/** Keys the chart leaves out on purpose. */
const NOT_SETTABLE: Record<string, string> = {
  context:
    'a control-cluster context: in a pod the control cluster is its own cluster (the chart refuses config.kubeconfig.context)',
  'leaderElection.identity': "each replica's own (the controller takes its host name and pid)",
};

/** Lists the chart adds its own entries to. */
const EXTENDED_BY_THE_CHART: Record<string, string> = {
  'mcp.allowedHosts': "the Service's own host names are added",
};

interface ZodNode {
  def: { type: string; innerType?: ZodNode };
  shape?: Record<string, ZodNode>;
}

/** Dotted paths of every key of the schema: objects are walked, anything else is a leaf. */
function keyPaths(node: ZodNode, prefix = ''): string[] {
  let s = node;
  while (['default', 'optional', 'nullable'].includes(s.def.type) && s.def.innerType) s = s.def.innerType;
  if (s.def.type !== 'object' || !s.shape) return [prefix];
  return Object.entries(s.shape).flatMap(([k, v]) => keyPaths(v, prefix ? `${prefix}.${k}` : k));
}

const at = (t: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Tree)[k] : undefined), t);

const home = mkdtempSync(join(tmpdir(), 'kpromo-helm-keys-'));
let helmBin: string;

/** The controller config.yaml the chart renders from these `config` values. */
async function renderedConfig(config: Tree, name: string): Promise<Tree> {
  const values = join(home, `${name}.json`);
  writeFileSync(values, JSON.stringify({ config }));
  const { stdout } = await promisify(execFile)(
    helmBin,
    ['template', 'kpromo', CHART, '--namespace', 'kpromo', '-f', values, '--show-only', 'templates/configmap.yaml'],
    {
      env: {
        ...process.env,
        HELM_CONFIG_HOME: join(home, 'config'),
        HELM_CACHE_HOME: join(home, 'cache'),
        HELM_DATA_HOME: join(home, 'data'),
      },
      maxBuffer: 16 * 1024 * 1024,
    },
  ).catch((e: { stderr?: string; message: string }) => {
    throw new Error(`helm template with config ${name}: ${e.stderr?.trim() || e.message}`);
  });
  const cm = parseAllDocuments(stdout)
    .map((d) => d.toJS() as { kind?: string; data?: Record<string, string> } | null)
    .find((d) => d?.kind === 'ConfigMap');
  const text = cm?.data?.['config.yaml'];
  if (!text) throw new Error(`helm template with config ${name}: no ConfigMap with config.yaml`);
  // The controller must accept what the chart renders.
  writeFileSync(join(home, `${name}.yaml`), text);
  loadConfig({ file: join(home, `${name}.yaml`), env: {} });
  return parse(text) as Tree;
}

let rendered: Tree;
let shardRendered: Tree;

beforeAll(async () => {
  helmBin = ensureHelm();
  [rendered, shardRendered] = await Promise.all([
    renderedConfig(VALUES, 'namespaces'),
    renderedConfig(SHARD_VALUES, 'shard'),
  ]);
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('deploy/helm/kpromo: every controller config key maps to config.* values', () => {
  const paths = keyPaths(ConfigSchema as unknown as ZodNode);
  const defaults = ConfigSchema.parse({}) as Tree;

  it('the schema walk finds the keys (nested ones included)', () => {
    expect(paths).toEqual(
      expect.arrayContaining(['workers', 'mcp.oauth.resource', 'lineStopAlerts.liftOnResolve', 'shard.name']),
    );
  });

  it.each(paths)('%s', (path) => {
    const output = path.startsWith('shard.') ? shardRendered : rendered;
    const values = path.startsWith('shard.') ? SHARD_VALUES : VALUES;
    if (path in NOT_SETTABLE) {
      expect(at(output, path), `${path} is left out (${NOT_SETTABLE[path]}) but the chart renders it`).toBeUndefined();
      return;
    }
    if (path in SET_BY_THE_CHART) {
      expect(at(output, path), `${path}: ${SET_BY_THE_CHART[path].why}`).toEqual(SET_BY_THE_CHART[path].value);
      return;
    }
    const given = at(values, path);
    expect(
      given,
      `config key ${path} (controller/src/config.ts) cannot be set through the chart: add config.${path} to deploy/helm/kpromo/values.yaml, values.schema.json and kpromo.config in templates/_helpers.tpl, then to VALUES in this test`,
    ).not.toBeUndefined();
    expect(
      isDeepStrictEqual(given, at(defaults, path)),
      `VALUES.${path} must differ from the controller's default, or a chart that drops it would pass`,
    ).toBe(false);
    if (path in EXTENDED_BY_THE_CHART) expect(at(output, path)).toEqual(expect.arrayContaining(given as unknown[]));
    else expect(at(output, path), `config.${path} is not rendered into the controller config as given`).toEqual(given);
  });
});
