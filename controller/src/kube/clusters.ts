import type { ClusterRef, Environment } from '@kpromo/api';
import * as k8s from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { metrics } from '../observability/metrics.js';
import { ConfigError } from '../util/configError.js';
import { CLUSTER_NOT_ALLOWED, type ClusterAccessRule, clusterAccessRefusal } from './clusterAccess.js';
import { chooseControlCluster, runningInPod } from './controlCluster.js';
import { resourcePath, SECRET } from './paths.js';
import { ClientRateLimiter, DEFAULT_RATE_LIMIT, type RateLimitOptions } from './rateLimit.js';
import { KubeRest } from './rest.js';

/** Stable identity of a cluster reference, shared by Environments that point at the same cluster. */
export function clusterKey(env: Environment): string {
  const c: ClusterRef | undefined = env.spec.cluster;
  // A fleet has no one cluster: its targets (fleetTargets) each have theirs.
  if (!c) return `fleet:${env.metadata.namespace}/${env.metadata.name}`;
  if (c.context) return `context:${c.context}`;
  if (c.kubeconfigSecretRef)
    return `secret:${env.metadata.namespace}/${c.kubeconfigSecretRef.name}/${c.kubeconfigSecretRef.key ?? 'kubeconfig'}`;
  return 'inCluster';
}

/** An Environment names a cluster that the controller config (clusterAccess) does not let its namespace use. */
export class ClusterNotAllowedError extends Error {
  override name = 'ClusterNotAllowedError';
  readonly code = 'CLUSTER_NOT_ALLOWED';
  readonly reason = CLUSTER_NOT_ALLOWED;
}

/**
 * Per-cluster REST clients. `base` is the controller's own kubeconfig: Environments name a context
 * in it, a kubeconfig Secret, or the in-cluster config, each only when `access` (controller config
 * clusterAccess) allows the Environment's namespace to. The control cluster is `control` when given
 * (the in-cluster ServiceAccount, chooseControlCluster), else base's current context.
 */
export class ClusterClients {
  private readonly clients = new Map<string, KubeRest>();
  readonly control: KubeRest;
  private readonly access: readonly ClusterAccessRule[];

  private readonly rateLimit: RateLimitOptions;

  constructor(
    private readonly base: k8s.KubeConfig,
    opts: {
      access: readonly ClusterAccessRule[];
      controlName?: string;
      rateLimit?: RateLimitOptions;
      control?: k8s.KubeConfig;
    },
  ) {
    this.access = opts.access;
    this.rateLimit = opts.rateLimit ?? DEFAULT_RATE_LIMIT;
    const control = opts.control ?? base;
    this.control = this.client(control, opts.controlName ?? (control.getCurrentContext() || 'control'));
  }

  /**
   * The controller's clients from its config: in a pod the control cluster is reached as its own
   * ServiceAccount and a kubeconfig supplies Environment contexts only; outside one (local
   * development) the kubeconfig's context is the control cluster. Refuses (ConfigError, saying what
   * to set) a kubeconfig or context that would silently become the control cluster in a pod.
   */
  static fromConfig(
    cfg: {
      kubeconfig?: string;
      context?: string;
      controlCluster: { inCluster: boolean };
      clusterAccess: readonly ClusterAccessRule[];
      kubeClient?: RateLimitOptions;
    },
    inPod = runningInPod(),
  ): ClusterClients {
    const choice = chooseControlCluster({
      kubeconfig: cfg.kubeconfig,
      context: cfg.context,
      controlInCluster: cfg.controlCluster.inCluster,
      inPod,
    });
    if (choice.kind === 'refuse') throw new ConfigError([choice.problem]);
    if (choice.kind === 'kubeconfig')
      return ClusterClients.fromFile(choice.path, choice.context, cfg.clusterAccess, cfg.kubeClient);
    const control = new k8s.KubeConfig();
    control.loadFromCluster();
    // Environment contexts only; without a kubeconfig, none (an Environment naming one is told so).
    const base = new k8s.KubeConfig();
    if (choice.environmentKubeconfig) base.loadFromFile(choice.environmentKubeconfig);
    return new ClusterClients(base, { access: cfg.clusterAccess, rateLimit: cfg.kubeClient, control });
  }

  static fromFile(
    path: string | undefined,
    context: string | undefined,
    access: readonly ClusterAccessRule[],
    rateLimit?: RateLimitOptions,
  ): ClusterClients {
    const kc = new k8s.KubeConfig();
    if (path) kc.loadFromFile(path);
    else kc.loadFromDefault();
    if (context) kc.setCurrentContext(context);
    return new ClusterClients(kc, { access, rateLimit });
  }

  /** A client of one cluster with its own client-side rate limit (config kubeClient.qps/burst). */
  private client(kc: k8s.KubeConfig, name: string): KubeRest {
    return new KubeRest(
      kc,
      name,
      undefined,
      new ClientRateLimiter({
        ...this.rateLimit,
        onWaited: (ms, priority) => {
          metrics.kubeClientThrottled.inc({ cluster: name, priority });
          metrics.kubeClientThrottleSeconds.inc({ cluster: name, priority }, ms / 1000);
        },
      }),
    );
  }

  private readonly refusals = new Map<string, string | undefined>();

  /** Why `env` may not use the cluster it names (controller config clusterAccess); undefined when it may. */
  refusal(env: Environment): string | undefined {
    // The target namespace is part of the decision (clusterAccess targetNamespaces): an Environment
    // allowed into its own namespace and then pointed at another one must be checked again.
    const key = `${env.metadata.namespace}\0${env.metadata.name}\0${clusterKey(env)}\0${env.spec.namespace}`;
    if (this.refusals.has(key)) return this.refusals.get(key);
    if (this.refusals.size > 10_000) this.refusals.clear();
    const r = clusterAccessRefusal(this.access, env);
    this.refusals.set(key, r);
    return r;
  }

  private forContext(context: string): KubeRest {
    const key = `context:${context}`;
    let c = this.clients.get(key);
    if (!c) {
      if (!this.base.getContexts().some((x) => x.name === context)) {
        throw new Error(`kubeconfig has no context "${context}"; add it or fix Environment spec.cluster.context`);
      }
      const kc = new k8s.KubeConfig();
      kc.loadFromString(this.base.exportConfig());
      kc.setCurrentContext(context);
      c = this.client(kc, context);
      this.clients.set(key, c);
    }
    return c;
  }

  /** The client for an Environment's cluster; reads the kubeconfig Secret from the control cluster when needed. */
  async forEnvironment(env: Environment): Promise<KubeRest> {
    // Before the client cache: another namespace may use the same cluster, this one still may not.
    const refused = this.refusal(env);
    if (refused) throw new ClusterNotAllowedError(refused);
    const key = clusterKey(env);
    const cached = this.clients.get(key);
    if (cached) return cached;
    const c = env.spec.cluster;
    const where = `Environment ${env.metadata.namespace}/${env.metadata.name}`;
    if (!c) throw new Error(`${where} is a fleet (spec.clusters): name one of its clusters`);
    if (c.context) return this.forContext(c.context);
    const kc = new k8s.KubeConfig();
    if (c.kubeconfigSecretRef) {
      const ref = c.kubeconfigSecretRef;
      const secret = await this.control.getOrUndefined<{ data?: Record<string, string> }>(
        resourcePath(SECRET, env.metadata.namespace, ref.name),
      );
      const dataKey = ref.key ?? 'kubeconfig';
      const b64 = secret?.data?.[dataKey];
      if (!b64) throw new Error(`${where}: Secret ${ref.name} key ${dataKey} not found in the control cluster`);
      const text = Buffer.from(b64, 'base64').toString('utf8');
      const unsafe = unsafeKubeconfigFields(text);
      if (unsafe.length)
        throw new Error(
          `${where}: the kubeconfig in Secret ${ref.name} key ${dataKey} uses ${unsafe.join(', ')}; kubeconfigs from Secrets may hold inline credentials and certificates only (no commands, auth providers or local files)`,
        );
      kc.loadFromString(text);
    } else {
      try {
        kc.loadFromCluster();
      } catch (e) {
        throw new Error(`${where}: inCluster config unavailable (not running in a pod?): ${String(e)}`);
      }
    }
    const rest = this.client(kc, key);
    this.clients.set(key, rest);
    return rest;
  }
}

/**
 * Fields of a kubeconfig that would make the controller run a command (exec, auth-provider) or read
 * its own files (token-file, *-certificate, client-key) on behalf of whoever wrote the Secret.
 */
export function unsafeKubeconfigFields(text: string): string[] {
  let doc: {
    users?: Array<{ name?: string; user?: Record<string, unknown> }>;
    clusters?: Array<{ name?: string; cluster?: Record<string, unknown> }>;
  };
  try {
    doc = (parseYaml(text) as typeof doc) ?? {};
  } catch {
    return []; // not YAML: loadFromString reports it
  }
  const out: string[] = [];
  for (const u of doc.users ?? []) {
    for (const f of ['exec', 'auth-provider', 'token-file', 'tokenFile', 'client-certificate', 'client-key'])
      if (u?.user?.[f] !== undefined) out.push(`users[${u.name ?? '?'}].${f}`);
  }
  for (const c of doc.clusters ?? []) {
    if (c?.cluster?.['certificate-authority'] !== undefined)
      out.push(`clusters[${c.name ?? '?'}].certificate-authority`);
  }
  return out;
}
