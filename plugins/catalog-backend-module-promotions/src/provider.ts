import type { Entity } from '@backstage/catalog-model';
import type { EntityProvider, EntityProviderConnection } from '@backstage/plugin-catalog-node';
import {
  type ClusterHandle,
  type EntityOrigin,
  type EntitySink,
  Exporter,
  type ExporterConfig,
  type Logger,
  type MappedEntity,
} from '@kpromo/exporter';
import {
  entityName,
  KIND_BY_BLUEPRINT,
  type MappingOptions,
  originOfIdentifier,
  toBackstageEntity,
} from './toBackstageEntity.js';

const keyOf = (bp: string, id: string) => `${bp}\u0000${id}`;

/**
 * Catalog entity provider over the exporter's watch + mapping library: a full mutation once the
 * initial lists are in (and on every scheduled run), delta mutations for watch events after that.
 */
export class PromotionsEntityProvider implements EntityProvider, EntitySink {
  private readonly entities = new Map<string, Entity>();
  private readonly blueprintOf = new Map<string, string>();
  private readonly originOf = new Map<string, EntityOrigin>();
  /** Entity ref -> the key of the CR that has it; a second CR with the same ref is left out. */
  private readonly refOwner = new Map<string, string>();
  /** Identifiers left out for a name collision, warned about once. */
  private readonly collided = new Set<string>();
  private connection?: EntityProviderConnection;
  private exporter?: Exporter;
  private initialDone = false;
  private added = new Map<string, Entity>();
  private removed = new Map<string, Entity>();
  private flushTimer?: NodeJS.Timeout;

  constructor(
    private readonly o: {
      name?: string;
      config: ExporterConfig;
      clusters: ClusterHandle[];
      log: Logger;
      mapping?: MappingOptions;
    },
  ) {}

  getProviderName(): string {
    return this.o.name ?? 'kpromo-promotions';
  }

  async connect(connection: EntityProviderConnection): Promise<void> {
    this.connection = connection;
    this.exporter = new Exporter({ config: this.o.config, clusters: this.o.clusters, sink: this, log: this.o.log });
    this.exporter.start();
    // Not awaited: the catalog must not block its startup on cluster reachability.
    void this.waitForSyncThenFull();
  }

  stop(): void {
    this.exporter?.stop();
    if (this.flushTimer) clearTimeout(this.flushTimer);
  }

  private async waitForSyncThenFull(): Promise<void> {
    while (this.exporter && !this.exporter.synced) await new Promise((r) => setTimeout(r, 200));
    await this.fullMutation();
    this.initialDone = true;
  }

  /** Replaces everything this provider owns with the current mapped cluster state. */
  async fullMutation(): Promise<void> {
    if (!this.connection || !this.exporter?.synced) return;
    this.added.clear();
    this.removed.clear();
    await this.connection.applyMutation({
      type: 'full',
      entities: [...this.entities.values()].map((entity) => ({ entity, locationKey: this.locationKey })),
    });
    this.o.log.info({ entities: this.entities.size }, 'catalog full mutation applied');
  }

  get size(): number {
    return this.entities.size;
  }

  private get locationKey(): string {
    return `kpromo-provider:${this.getProviderName()}`;
  }

  private relationRef = (identifier: string): string => {
    // Relations carry Port identifiers; resolve the target's kind and name from what we have seen
    // (else from the identifier's <cluster>:<namespace>:<name> form).
    const bp = this.blueprintOf.get(identifier);
    const kind = (bp && KIND_BY_BLUEPRINT[bp]?.kind) || 'resource';
    const { namespace, name } = entityName(
      this.originOf.get(identifier) ?? originOfIdentifier(identifier),
      this.o.mapping?.naming,
    );
    return `${kind.toLowerCase()}:${namespace}/${name}`;
  };

  put(m: MappedEntity, origin: EntityOrigin): void {
    this.blueprintOf.set(m.entity.identifier, m.blueprint);
    this.originOf.set(m.entity.identifier, origin);
    const e = toBackstageEntity(m, origin, this.getProviderName(), this.relationRef, this.o.mapping);
    const k = keyOf(m.blueprint, m.entity.identifier);
    const ref = `${e.kind}:${e.metadata.namespace}/${e.metadata.name}`.toLowerCase();
    const holder = this.refOwner.get(ref);
    if (holder && holder !== k) {
      if (this.collided.has(k)) return;
      this.collided.add(k);
      this.o.log.warn(
        { entityRef: ref, kept: holder.split('\u0000')[1], skipped: m.entity.identifier },
        'two kpromo resources map to the same catalog entity; set kpromo.catalog.entityNames to namespace or qualified',
      );
      return;
    }
    this.refOwner.set(ref, k);
    this.collided.delete(k);
    this.entities.set(k, e);
    this.removed.delete(k);
    this.added.set(k, e);
    this.scheduleFlush();
  }

  remove(blueprint: string, identifier: string): void {
    const k = keyOf(blueprint, identifier);
    this.collided.delete(k);
    const e = this.entities.get(k);
    if (!e) return;
    this.refOwner.delete(`${e.kind}:${e.metadata.namespace}/${e.metadata.name}`.toLowerCase());
    this.entities.delete(k);
    this.added.delete(k);
    this.removed.set(k, e);
    this.scheduleFlush();
  }

  /** Coalesces bursts of watch events into one delta mutation. */
  private scheduleFlush(): void {
    if (!this.initialDone || this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      void this.flushDelta();
    }, 50);
  }

  private async flushDelta(): Promise<void> {
    if (!this.connection || (this.added.size === 0 && this.removed.size === 0)) return;
    const added = [...this.added.values()].map((entity) => ({ entity, locationKey: this.locationKey }));
    const removed = [...this.removed.values()].map((entity) => ({ entity, locationKey: this.locationKey }));
    this.added.clear();
    this.removed.clear();
    try {
      await this.connection.applyMutation({ type: 'delta', added, removed });
    } catch (e) {
      // The next scheduled full mutation repairs whatever this delta missed.
      this.o.log.error({ err: String(e) }, 'catalog delta mutation failed');
    }
  }
}
