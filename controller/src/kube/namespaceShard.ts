import { Informer, type InformerLog, type KObject } from './informer.js';
import { KubeError, type KubeRest } from './rest.js';

/** Which control-cluster namespaces a controller owns; the cache keeps only their kpromo objects. */
export interface NamespaceScope {
  has(namespace: string | undefined): boolean;
  /** Called after namespaces joined or left the scope. */
  onChange(fn: () => void): void;
  start(signal?: AbortSignal): Promise<void>;
  stop(): void;
  /** The namespaces currently in scope (sorted), for status pages and logs. */
  list(): string[];
}

export class ShardSelectorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ShardSelectorError';
  }
}

/**
 * The namespaces of a shard, chosen by a label selector over Namespace objects and followed live:
 * relabelling a namespace moves its Applications, Environments, flows and plans to another shard
 * without restarting either. Namespaces are the unit because everything a plan touches (its flow,
 * environments, applications, history) lives in its namespace, and RBAC is granted per namespace.
 */
export class NamespaceShard implements NamespaceScope {
  private readonly informer: Informer<KObject>;
  private readonly listeners: Array<() => void> = [];
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly rest: KubeRest,
    readonly selector: string,
    log?: InformerLog,
    /** Namespace events within this window are reported as one change (a relabelling script). */
    private readonly coalesceMs = 200,
  ) {
    this.informer = new Informer<KObject>(rest, '/api/v1/namespaces', log, {
      labelSelector: selector,
      // Only the names matter.
      transform: (o) => ({ metadata: { name: o.metadata.name, resourceVersion: o.metadata.resourceVersion } }),
    });
    // A watch with a label selector reports an object that stops matching as DELETED.
    this.informer.on((type) => {
      if (type === 'update') return;
      if (!this.informer.hasSynced) return;
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.apply(), this.coalesceMs);
    });
  }

  /**
   * The set answered by {@link has} changes only here, right before the listeners run: the cache
   * holds back events from the moment the set changes until every kind has listed again, so no
   * object of a joining namespace is seen before its peers (a plan before its flow).
   */
  private apply() {
    const next = this.listed();
    if (next.size === this.current.size && [...next].every((n) => this.current.has(n))) return;
    this.current = next;
    for (const l of this.listeners) l();
  }
  private current = new Set<string>();
  private listed(): Set<string> {
    return new Set(this.informer.list().map((n) => n.metadata.name));
  }

  has(namespace: string | undefined): boolean {
    return namespace !== undefined && this.current.has(namespace);
  }

  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  list(): string[] {
    return [...this.current].sort();
  }

  /** Checks the selector with the apiserver (its own parser), then lists and watches. */
  async start(signal?: AbortSignal): Promise<void> {
    try {
      await this.rest.request('GET', '/api/v1/namespaces', {
        query: { labelSelector: this.selector, limit: 1 },
        signal,
      });
    } catch (e) {
      if (e instanceof KubeError && e.status === 400)
        throw new ShardSelectorError(
          `shard.namespaceSelector ${JSON.stringify(this.selector)} is not a valid label selector: ${e.message}`,
        );
      if (e instanceof KubeError && e.status === 403)
        throw new ShardSelectorError(
          `shard.namespaceSelector needs permission to list and watch namespaces (cluster scope): ${e.message}`,
        );
      throw e;
    }
    this.informer.start();
    await this.informer.waitForSync(signal);
    this.current = this.listed();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.informer.stop();
  }
}
