import { GROUP, VERSION } from '@kpromo/api';
import type { KpromoEventLike } from './cacheView.js';
import { Informer, type InformerLog, type KObject } from './informer.js';
import { EVENT, resourcePath } from './paths.js';
import type { KubeRest } from './rest.js';

/** What is kept of a core/v1 Event about a kpromo object: what `state` shows, nothing else. */
export interface KpromoEvent extends KObject, Omit<KpromoEventLike, 'metadata'> {
  metadata: KObject['metadata'] & { creationTimestamp?: string };
  involvedObject: { kind?: string; name?: string };
}

/** Events are kept for their message's first 512 characters: what `state` shows of one. */
const MESSAGE_KEPT = 512;

function slimEvent(e: KpromoEvent): KpromoEvent {
  const m = e.metadata;
  return {
    metadata: {
      name: m.name,
      namespace: m.namespace,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    involvedObject: { kind: e.involvedObject?.kind, name: e.involvedObject?.name },
    type: e.type,
    reason: e.reason,
    message: e.message?.slice(0, MESSAGE_KEPT),
    count: e.count,
    lastTimestamp: e.lastTimestamp,
    eventTime: e.eventTime,
    firstTimestamp: e.firstTimestamp,
  };
}

/**
 * The core/v1 Events about kpromo objects (Applications, plans, …) of the controller's namespaces,
 * watched (the field selector keeps other Events out), so MCP `state` reads an object's recent Events
 * from memory: listing them from the apiserver scans every Event of the namespace (35-40 ms at 4,500
 * Events). A namespace whose Events the controller may not list (403: the chart grants it; a
 * hand-made Role may not) is given up, and callers read from the apiserver as before.
 */
export class KpromoEventCache {
  private readonly informers = new Map<string, Informer<KpromoEvent>>();

  constructor(
    private readonly rest: KubeRest,
    private readonly log?: InformerLog,
  ) {}

  /** Starts one informer per namespace (`undefined`: every namespace, filtered by `accept`). */
  start(namespaces: Array<string | undefined>, accept?: (o: KObject) => boolean): void {
    for (const ns of namespaces) {
      const key = ns ?? '';
      if (this.informers.has(key)) continue;
      const inf = new Informer<KpromoEvent>(this.rest, resourcePath(EVENT, ns), this.log, {
        fieldSelector: `involvedObject.apiVersion=${GROUP}/${VERSION}`,
        transform: slimEvent,
        ...(accept ? { accept } : {}),
      });
      inf.onState(() => {
        if (inf.lastErrorStatus !== 403) return;
        inf.stop();
        this.informers.delete(key);
        this.log?.warn(
          { namespace: ns ?? '(all)', err: inf.lastError },
          'may not list/watch Events: MCP state reads them from the apiserver instead (grant list, watch on events)',
        );
      });
      this.informers.set(key, inf);
      inf.start();
    }
  }

  stop(): void {
    for (const i of this.informers.values()) i.stop();
    this.informers.clear();
  }

  /**
   * Events about `kind`/`name` in `namespace`, or undefined when this cache cannot answer (not
   * listed yet, failing, or not watched): the caller then asks the apiserver.
   */
  about(namespace: string, kind: string, name: string): KpromoEvent[] | undefined {
    const inf = this.informers.get(namespace) ?? this.informers.get('');
    if (!inf?.hasSynced || inf.lastError) return undefined;
    return inf
      .list()
      .filter(
        (e) => e.metadata.namespace === namespace && e.involvedObject.kind === kind && e.involvedObject.name === name,
      );
  }
}
