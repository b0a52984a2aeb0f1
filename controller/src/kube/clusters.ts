import type { ClusterRef, Environment } from '@kpromo/api';
import * as k8s from '@kubernetes/client-node';
import { resourcePath, SECRET } from './paths.js';
import { KubeRest } from './rest.js';

/** Stable identity of a cluster reference, shared by Environments that point at the same cluster. */
export function clusterKey(env: Environment): string {
  const c: ClusterRef = env.spec.cluster;
  if (c.context) return `context:${c.context}`;
  if (c.kubeconfigSecretRef)
    return `secret:${env.metadata.namespace}/${c.kubeconfigSecretRef.name}/${c.kubeconfigSecretRef.key ?? 'kubeconfig'}`;
  return 'inCluster';
}

/**
 * Per-cluster REST clients. `base` is the controller's own kubeconfig (its current context is the
 * control cluster); Environments name a context in it, a kubeconfig Secret, or the in-cluster config.
 */
export class ClusterClients {
  private readonly clients = new Map<string, KubeRest>();
  readonly control: KubeRest;

  constructor(
    private readonly base: k8s.KubeConfig,
    controlName = base.getCurrentContext() || 'control',
  ) {
    this.control = new KubeRest(base, controlName);
  }

  static fromFile(path: string | undefined, context?: string): ClusterClients {
    const kc = new k8s.KubeConfig();
    if (path) kc.loadFromFile(path);
    else kc.loadFromDefault();
    if (context) kc.setCurrentContext(context);
    return new ClusterClients(kc);
  }

  forContext(context: string): KubeRest {
    const key = `context:${context}`;
    let c = this.clients.get(key);
    if (!c) {
      if (!this.base.getContexts().some((x) => x.name === context)) {
        throw new Error(`kubeconfig has no context "${context}"; add it or fix Environment spec.cluster.context`);
      }
      const kc = new k8s.KubeConfig();
      kc.loadFromString(this.base.exportConfig());
      kc.setCurrentContext(context);
      c = new KubeRest(kc, context);
      this.clients.set(key, c);
    }
    return c;
  }

  /** The client for an Environment's cluster; reads the kubeconfig Secret from the control cluster when needed. */
  async forEnvironment(env: Environment): Promise<KubeRest> {
    const key = clusterKey(env);
    const cached = this.clients.get(key);
    if (cached) return cached;
    const c = env.spec.cluster;
    const where = `Environment ${env.metadata.namespace}/${env.metadata.name}`;
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
      kc.loadFromString(Buffer.from(b64, 'base64').toString('utf8'));
    } else {
      try {
        kc.loadFromCluster();
      } catch (e) {
        throw new Error(`${where}: inCluster config unavailable (not running in a pod?): ${String(e)}`);
      }
    }
    const rest = new KubeRest(kc, key);
    this.clients.set(key, rest);
    return rest;
  }
}
