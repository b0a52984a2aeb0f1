import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { SHARD_LABEL } from '@kpromo/api';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { resourceKindEntryProblem } from './api/resourceKinds.js';
import { AUTH_DEFAULTS, AuthConfigSchema } from './auth/config.js';
import { ClusterAccessSchema } from './kube/clusterAccess.js';
import { MCP_DEFAULTS, McpConfigSchema } from './mcp/config.js';
import { EGRESS_DEFAULTS, EgressConfigSchema } from './net/egressConfig.js';
import { PERSONS_DEFAULTS, PersonsConfigSchema } from './policy/persons.js';
import { SUPPLY_CHAIN_DEFAULTS, SupplyChainConfigSchema } from './supplychain/trustAnchors.js';
import { ConfigError } from './util/configError.js';

const intFrom = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')]);

/** The Alertmanager receiver's settings when the config names none (docs/line-stop.md). */
export const LINE_STOP_ALERT_DEFAULTS = { label: 'kpromo_stop_line', liftOnResolve: false };

export const ConfigSchema = z
  .object({
    kubeconfig: z.string().min(1).optional().describe('Path to the kubeconfig; in-cluster/default loading when unset'),
    context: z.string().min(1).optional().describe('Context of the control cluster (outside a pod only)'),
    /**
     * In a pod the control cluster is always this cluster, as the controller's ServiceAccount; with
     * a kubeconfig as well (Environment contexts), this must be true to say so (chooseControlCluster).
     */
    controlCluster: z
      .object({ inCluster: bool.default(false) })
      .strict()
      .default({ inCluster: false }),
    namespaces: z.array(z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name')).default([]),
    defaultNamespace: z.string().min(1).default('default'),
    /**
     * The one namespace whose LineStops with `scope: AllNamespaces` stop every namespace (grant
     * create/delete on linestops there to platform admins, on-call and the Alertmanager receiver
     * only; the receiver also needs the verb `alert` on linestops in all namespaces for such a
     * stop); unset: every LineStop stops its own namespace only.
     */
    lineStopNamespace: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name')
      .optional()
      .describe('Namespace whose LineStops with scope AllNamespaces stop every namespace'),
    /**
     * The one namespace whose OrgPolicies (org-level gates, docs/org-policy.md) every flow inherits;
     * grant write on orgpolicies there to platform admins only. Unset: no org gates.
     */
    orgPolicyNamespace: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name')
      .optional()
      .describe('Namespace whose OrgPolicies every flow inherits'),
    /** The Alertmanager receiver (POST /api/v1/alertmanager, docs/line-stop.md). */
    lineStopAlerts: z
      .object({
        label: z
          .string()
          .regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, 'must be a Prometheus label name')
          .default(LINE_STOP_ALERT_DEFAULTS.label),
        liftOnResolve: bool.default(LINE_STOP_ALERT_DEFAULTS.liftOnResolve),
      })
      .default(LINE_STOP_ALERT_DEFAULTS),
    workers: intFrom(1, 64).default(4),
    /**
     * Client-side rate limit per cluster (client-go's QPS/Burst): sustained requests per second and
     * the burst after a quiet spell; derived status writes wait behind promotion steps. qps 0: off.
     */
    kubeClient: z
      .object({ qps: intFrom(0, 10_000).default(50), burst: intFrom(1, 10_000).default(100) })
      .default({ qps: 50, burst: 100 }),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    server: z
      .object({ host: z.string().min(1).default('127.0.0.1'), port: intFrom(0, 65535).default(8080) })
      .default({ host: '127.0.0.1', port: 8080 }),
    auth: AuthConfigSchema.default(AUTH_DEFAULTS),
    leaderElection: z
      .object({
        enabled: bool.default(true),
        namespace: z.string().min(1).default('default'),
        name: z.string().min(1).default('kpromo-controller'),
        identity: z.string().min(1).optional(),
        leaseDurationSeconds: intFrom(1, 600).default(15),
        renewIntervalMs: intFrom(100, 600_000).optional(),
        /** Stop leading (and fence all writes) after this long without a renew; < lease duration. */
        renewDeadlineMs: intFrom(100, 600_000).optional(),
      })
      .default({ enabled: true, namespace: 'default', name: 'kpromo-controller', leaseDurationSeconds: 15 }),
    tracing: z.object({ otlpEndpoint: z.string().url().optional() }).default({}),
    mcp: McpConfigSchema.default(MCP_DEFAULTS),
    /** SSRF guard for URLs from CRs (webhooks, health checks): extra allowed ranges. */
    egress: EgressConfigSchema.default(EGRESS_DEFAULTS),
    /**
     * Which clusters Environments may reach, by their namespace: kubeconfig contexts, kubeconfig
     * Secrets, the in-cluster service account. Absent or empty: none (every Environment is refused).
     */
    clusterAccess: ClusterAccessSchema,
    /**
     * Trust anchors (docs/supply-chain.md): the keys signature policies may trust and promotion
     * attestations are signed with, as Secrets in the controller's own namespace, each with the
     * tenant namespaces whose flows may name it. Empty: no flow may use any.
     */
    supplyChain: SupplyChainConfigSchema.default(SUPPLY_CHAIN_DEFAULTS),
    /**
     * Which identities are one person (docs/auth.md, "One person, one approver"): approval policies
     * count persons, so one human never gives two approvals of `count: 2` nor approves their own
     * plan from another door. Empty: each identity is its own person.
     */
    persons: PersonsConfigSchema.default(PERSONS_DEFAULTS),
    /**
     * The portal's page of a plan, linked from the pull requests kpromo opens (docs/delivery.md):
     * {namespace} and {name} are replaced, e.g. https://backstage.example.com/promotions/{namespace}/{name}.
     */
    planURL: z
      .string()
      .url()
      .regex(/^https?:\/\//, 'must be an http(s) URL')
      .optional(),
    /**
     * Custom resources (`<plural>.<group>`, exactly) that POST /api/v1/resources may create, patch
     * and delete as the caller (Port self-service actions of discovered CRDs). Empty: none. Never
     * Kubernetes built-ins (no dot in the group, or *.k8s.io) nor kpromo's own kinds.
     */
    resourceKinds: z
      .array(
        z
          .string()
          .regex(
            /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/,
            'must be <plural>.<group> of a custom resource, e.g. widgets.example.com',
          ),
      )
      .default([])
      // Refused here, at load, and again by the route: Kubernetes built-ins and kpromo kinds.
      .superRefine((list, ctx) => {
        for (const entry of list) {
          const problem = resourceKindEntryProblem(entry);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }
      }),
    /**
     * Run as one shard of several controllers: this one reconciles only the namespaces its selector
     * picks (followed live) and campaigns for its own Lease `<leaderElection.name>-<name>`.
     */
    shard: z
      .object({
        name: z
          .string()
          .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS label (lowercase letters, digits, -)')
          .max(40)
          .optional(),
        /**
         * Label selector over Namespaces (apiserver syntax, e.g. `team in (a,b)` or
         * `!promotions.kpromo.dev/shard` for the default shard). Default with a name:
         * `promotions.kpromo.dev/shard=<name>`.
         */
        namespaceSelector: z.string().min(1).max(1024).optional(),
      })
      .strict()
      .optional(),
    maxAttempts: intFrom(1, 100).default(5),
    shutdownGraceSeconds: intFrom(0, 3600).default(20),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.shard && !c.shard.name)
      ctx.addIssue({
        code: 'custom',
        path: ['shard', 'name'],
        message: 'a shard needs a name (its Lease and its identity in Events and metrics)',
      });
    if (c.shard && c.namespaces.length)
      ctx.addIssue({
        code: 'custom',
        path: ['namespaces'],
        message:
          'namespaces and shard are exclusive: a shard takes its namespaces from shard.namespaceSelector (label them promotions.kpromo.dev/shard=<name>)',
      });
    if (c.lineStopNamespace && c.namespaces.length && !c.namespaces.includes(c.lineStopNamespace))
      ctx.addIssue({
        code: 'custom',
        path: ['lineStopNamespace'],
        message: `must be one of namespaces (${c.namespaces.join(', ')}): the controller sees LineStops only where it watches`,
      });
    if (c.orgPolicyNamespace && c.namespaces.length && !c.namespaces.includes(c.orgPolicyNamespace))
      ctx.addIssue({
        code: 'custom',
        path: ['orgPolicyNamespace'],
        message: `must be one of namespaces (${c.namespaces.join(', ')}): the controller sees OrgPolicies only where it watches`,
      });
    const le = c.leaderElection;
    const leaseMs = le.leaseDurationSeconds * 1000;
    const deadline = le.renewDeadlineMs ?? (leaseMs * 2) / 3;
    if (le.renewDeadlineMs !== undefined && le.renewDeadlineMs >= leaseMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['leaderElection', 'renewDeadlineMs'],
        message: `must be shorter than leaseDurationSeconds (${le.leaseDurationSeconds}s): the leader must stop before another may take over`,
      });
    }
    if (le.renewIntervalMs !== undefined && le.renewIntervalMs >= deadline) {
      ctx.addIssue({
        code: 'custom',
        path: ['leaderElection', 'renewIntervalMs'],
        message: `must be shorter than the renew deadline (${Math.round(deadline)} ms; default two thirds of leaseDurationSeconds)`,
      });
    }
  });

export type Config = z.infer<typeof ConfigSchema>;

export { ConfigError };

/** env var -> config path; values are strings, coerced by the schema. */
const ENV_MAP: Record<string, string[]> = {
  KPROMO_KUBECONFIG: ['kubeconfig'],
  KUBECONFIG: ['kubeconfig'],
  KPROMO_CONTEXT: ['context'],
  KPROMO_CONTROL_IN_CLUSTER: ['controlCluster', 'inCluster'],
  KPROMO_NAMESPACES: ['namespaces'],
  KPROMO_DEFAULT_NAMESPACE: ['defaultNamespace'],
  KPROMO_LINE_STOP_NAMESPACE: ['lineStopNamespace'],
  KPROMO_ORG_POLICY_NAMESPACE: ['orgPolicyNamespace'],
  KPROMO_LINE_STOP_ALERT_LABEL: ['lineStopAlerts', 'label'],
  KPROMO_LINE_STOP_LIFT_ON_RESOLVE: ['lineStopAlerts', 'liftOnResolve'],
  KPROMO_WORKERS: ['workers'],
  KPROMO_KUBE_QPS: ['kubeClient', 'qps'],
  KPROMO_KUBE_BURST: ['kubeClient', 'burst'],
  KPROMO_LOG_LEVEL: ['logLevel'],
  KPROMO_HOST: ['server', 'host'],
  KPROMO_PORT: ['server', 'port'],
  KPROMO_LEADER_ELECT: ['leaderElection', 'enabled'],
  KPROMO_LEASE_NAMESPACE: ['leaderElection', 'namespace'],
  KPROMO_LEASE_NAME: ['leaderElection', 'name'],
  KPROMO_LEASE_DURATION_SECONDS: ['leaderElection', 'leaseDurationSeconds'],
  KPROMO_IDENTITY: ['leaderElection', 'identity'],
  OTEL_EXPORTER_OTLP_ENDPOINT: ['tracing', 'otlpEndpoint'],
  KPROMO_MAX_ATTEMPTS: ['maxAttempts'],
  KPROMO_SHARD: ['shard', 'name'],
  KPROMO_SHARD_NAMESPACE_SELECTOR: ['shard', 'namespaceSelector'],
  KPROMO_RESOURCE_KINDS: ['resourceKinds'],
  KPROMO_MCP_ENABLED: ['mcp', 'enabled'],
  KPROMO_MCP_PORT: ['mcp', 'port'],
  KPROMO_MCP_WRITE: ['mcp', 'write'],
  KPROMO_MCP_AUTHORIZATION_SERVERS: ['mcp', 'oauth', 'authorizationServers'],
  KPROMO_MCP_RESOURCE_URL: ['mcp', 'oauth', 'resource'],
  KPROMO_TOKENS_FILE: ['auth', 'staticTokensFile'],
  KPROMO_ANONYMOUS_METRICS: ['auth', 'anonymousMetrics'],
  KPROMO_EGRESS_ALLOWED_CIDRS: ['egress', 'allowedCidrs'],
};

/** Env vars holding comma-separated lists. */
const LIST_ENV = new Set([
  'KPROMO_NAMESPACES',
  'KPROMO_EGRESS_ALLOWED_CIDRS',
  'KPROMO_MCP_AUTHORIZATION_SERVERS',
  'KPROMO_RESOURCE_KINDS',
]);

type Tree = Record<string, unknown>;

function setPath(t: Tree, path: string[], v: unknown) {
  let n = t;
  for (const p of path.slice(0, -1)) {
    n[p] = (n[p] as Tree | undefined) ?? {};
    n = n[p] as Tree;
  }
  n[path[path.length - 1]] = v;
}

function merge(a: Tree, b: Tree): Tree {
  const out: Tree = { ...a };
  for (const [k, v] of Object.entries(b)) {
    if (v === undefined) continue;
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && out[k] && typeof out[k] === 'object'
        ? merge(out[k] as Tree, v as Tree)
        : v;
  }
  return out;
}

/**
 * Config precedence: flags > env > file > defaults. Every bad value is reported with where it is
 * and what is expected, all at once.
 */
export function loadConfig(opts: { file?: string; env?: NodeJS.ProcessEnv; flags?: Tree } = {}): Config {
  let fileTree: Tree = {};
  if (opts.file) {
    let text: string;
    try {
      text = readFileSync(opts.file, 'utf8');
    } catch (e) {
      throw new ConfigError([
        `config file ${opts.file}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      ]);
    }
    try {
      fileTree = (parseYaml(text) as Tree | null) ?? {};
    } catch (e) {
      throw new ConfigError([`config file ${opts.file}: not valid YAML: ${(e as Error).message.split('\n')[0]}`]);
    }
    if (typeof fileTree !== 'object' || Array.isArray(fileTree))
      throw new ConfigError([`config file ${opts.file}: must be a YAML mapping`]);
  }
  const envTree: Tree = {};
  const env = opts.env ?? process.env;
  const origin = new Map<string, string>();
  for (const [name, path] of Object.entries(ENV_MAP)) {
    const v = env[name];
    if (v === undefined || v === '') continue;
    if (name === 'KUBECONFIG' && env.KPROMO_KUBECONFIG) continue;
    setPath(
      envTree,
      path,
      LIST_ENV.has(name)
        ? v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : v,
    );
    origin.set(path.join('.'), `env ${name}`);
  }
  for (const k of Object.keys(opts.flags ?? {})) origin.set(k, `flag --${k}`);
  const merged = merge(merge(fileTree, envTree), opts.flags ?? {});
  const r = ConfigSchema.safeParse(merged);
  if (r.success) {
    const c = r.data;
    c.leaderElection.identity ??= `${hostname()}-${process.pid}`;
    if (c.shard?.name) {
      // Each shard elects its own leader: one shard failing never stops the others.
      c.leaderElection.name = `${c.leaderElection.name}-${c.shard.name}`;
      c.shard.namespaceSelector ??= `${SHARD_LABEL}=${c.shard.name}`;
    }
    // The issuers whose JWTs are accepted are authorization servers of the MCP endpoint (RFC 9728).
    c.mcp.oauth.authorizationServers = [
      ...new Set([...c.mcp.oauth.authorizationServers, ...(c.auth.jwt ?? []).map((j) => j.issuer.url)]),
    ];
    return c;
  }
  throw new ConfigError(
    r.error.issues.map((i) => {
      const path = i.path.join('.');
      const src = origin.get(path) ?? (opts.file ? `file ${opts.file}` : 'config');
      const got = i.path.reduce<unknown>((o, k) => (o as Tree | undefined)?.[k as string], merged);
      return `${path || '(root)'} (${src}): ${i.message}${got !== undefined && typeof got !== 'object' ? ` (got ${JSON.stringify(got)})` : ''}`;
    }),
  );
}
