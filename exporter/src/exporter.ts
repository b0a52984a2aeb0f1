import type * as k8s from '@kubernetes/client-node';
import { arrivalRate, type CoalescePolicy, coalesceWaitMs, MAX_BULK_ENTITIES } from './batching.js';
import type { ExporterConfig, ResourceConfig } from './config.js';
import { crdToPortActions, type PortAction } from './crdActions.js';
import { type Crd, crdToPortResource, crdToResource, matchCrds } from './discoverCrds.js';
import { jqEnvironment } from './jq.js';
import type { Logger } from './log.js';
import {
  type CompiledResource,
  compileResource,
  type MapOptions,
  type MappedEntity,
  type MapResult,
  mapObjects,
} from './mapEntity.js';
import { kindString, parseKind } from './resourceKind.js';
import { type KubeObject, objectKey, ResourceWatcher, type WatchEvent } from './watchResources.js';

/** The custom resource an entity was mapped from. */
export interface EntityOrigin {
  cluster: string;
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

/** Where mapped entities go: the Port sink and the Backstage provider both implement this. */
export interface EntitySink {
  put(m: MappedEntity, origin: EntityOrigin): void;
  remove(blueprint: string, identifier: string): void;
  addBlueprint?(bp: import('./config.js').BlueprintConfig): void;
  /** Self-service actions for a discovered CRD's blueprint (Port only). */
  addActions?(actions: PortAction[]): void;
}

export interface ClusterHandle {
  name: string;
  kc: k8s.KubeConfig;
}

export interface ExporterOptions {
  config: ExporterConfig;
  clusters: ClusterHandle[];
  sink: EntitySink;
  log: Logger;
  /**
   * Live upserts and deletes wait up to this long (from the first one) to be mapped and handed to
   * the sink together, so a burst becomes one jq call and full bulk calls; 20 waiting changes go at
   * once. Default: `config.port.batchWindowMs`; 0 handles each event as it comes.
   */
  batchWindowMs?: number;
  /** Under load, changes wait up to this long for a full bulk call. Default: `config.port.maxBatchDelayMs`. */
  maxBatchDelayMs?: number;
}

/** Live changes of one watched source waiting for the batch window; the last event per object wins. */
interface PendingEvents {
  program: CompiledResource;
  log: Logger;
  events: Map<string, WatchEvent>;
}

/** Arrival times kept for the rate estimate (the most recent ones). */
const RATE_SAMPLES = 256;

/**
 * Keys held for every object and entity are built with `join`, which makes one flat string: a
 * template literal makes a V8 rope (a node per piece, kept alive with the pieces), which at 10,000
 * objects held 4 MiB of the exporter's heap.
 */
const entityKey = (m: MappedEntity) => [m.blueprint, m.entity.identifier].join('\u0000');
const ownerKey = (source: string, objKey: string) => [source, objKey].join('|');

/** The objects an entity comes from: one in the common case (held as the string), a set when several map to it. */
type Owners = string | Set<string>;

/**
 * Watches every configured resource in every cluster, maps objects to entities and keeps the sink's
 * desired set equal to the mapped cluster state. An entity may come from several objects
 * (itemsToParse), so it is removed only when no object maps to it any more.
 */
export class Exporter {
  private readonly watchers = new Map<string, ResourceWatcher>();
  /** source (cluster|kind#index) → object key → entity keys it produced. */
  private readonly produced = new Map<string, Map<string, string[]>>();
  /** entity key → the objects (`source|object key`) that map to it. */
  private readonly owners = new Map<string, Owners>();
  /** Objects whose mapping failed, with the reason (skipped, and resync holds deletes). */
  readonly mappingErrors = new Map<string, string>();
  private readonly blueprints = new Set<string>();
  private readonly discovered = new Set<string>();
  /** One window for all sources, so changes from several clusters share bulk calls. */
  private readonly pending = new Map<string, PendingEvents>();
  private pendingCount = 0;
  /** When the oldest waiting change arrived. */
  private pendingSince = 0;
  /** Recent arrival times of live changes (at most RATE_SAMPLES), for the rate estimate. */
  private readonly arrivals: number[] = [];
  private readonly coalesce: CoalescePolicy;
  private pendingTimer?: NodeJS.Timeout;
  private flushing?: Promise<void>;
  private readonly env: Record<string, string>;
  private readonly mapOptions: MapOptions;
  private readonly windowMs: number;
  private stopped = false;

  constructor(private readonly o: ExporterOptions) {
    for (const b of o.config.blueprints) this.blueprints.add(b.identifier);
    this.env = jqEnvironment(process.env, o.config.jqEnv);
    this.mapOptions = { stateKey: o.config.stateKey, dialect: o.config.dialect };
    this.windowMs = o.batchWindowMs ?? o.config.port?.batchWindowMs ?? 0;
    this.coalesce = {
      fullAt: MAX_BULK_ENTITIES,
      windowMs: this.windowMs,
      maxDelayMs: o.maxBatchDelayMs ?? o.config.port?.maxBatchDelayMs ?? 0,
    };
  }

  start(): void {
    for (const cluster of this.o.clusters) {
      this.o.config.resources.forEach((res, i) => {
        this.watchResource(cluster, res, `#${i}`);
      });
      if (this.o.config.crdsToDiscover) this.watchCrds(cluster, this.o.config.crdsToDiscover);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.watchers.values()) w.stop();
    if (this.pendingTimer) clearTimeout(this.pendingTimer);
  }

  /** Pauses every watcher (see ResourceWatcher.pause); the returned function resumes them. */
  pauseWatches(): () => void {
    const resumes = [...this.watchers.values()].map((w) => w.pause());
    return () => {
      for (const r of resumes) r();
    };
  }

  get synced(): boolean {
    return [...this.watchers.values()].every((w) => w.hasSynced);
  }

  /** Blueprints this exporter writes to (configured, discovered or seen in mappings). */
  get ownedBlueprints(): string[] {
    return [...this.blueprints];
  }

  watchedKinds(cluster: string): string[] {
    return [...this.watchers.keys()].filter((k) => k.startsWith(`${cluster}|`)).map((k) => k.split('|')[1]);
  }

  private watchResource(cluster: ClusterHandle, res: ResourceConfig, tag: string): void {
    const source = `${cluster.name}|${res.kind}${tag}`;
    if (this.watchers.has(source)) return;
    const program = compileResource(res, this.env)(cluster.name);
    const log = this.o.log.child({ cluster: cluster.name, kind: res.kind });
    const w = new ResourceWatcher({
      kc: cluster.kc,
      kind: parseKind(res.kind),
      log,
      onEvent: (e) => this.onEvent(source, program, log, e),
    });
    this.watchers.set(source, w);
    w.start();
  }

  private onEvent(source: string, program: CompiledResource, log: Logger, e: WatchEvent): Promise<void> | undefined {
    if (e.type === 'synced') return undefined;
    if (e.type === 'page') {
      // Changes seen before this list are older than it: hand them over first, then the list.
      return this.flushPending().then(() => this.mapAndApply(source, program, log, e.objects));
    }
    if (this.windowMs <= 0) return this.handle(source, program, log, [e]);
    let p = this.pending.get(source);
    if (!p) {
      p = { program, log, events: new Map() };
      this.pending.set(source, p);
    }
    const k = objectKey(e.object);
    const now = performance.now();
    this.arrivals.push(now);
    if (this.arrivals.length > RATE_SAMPLES) this.arrivals.shift();
    if (this.pendingCount === 0) this.pendingSince = now;
    // Level-triggered: the newest event for an object carries its whole state.
    if (p.events.delete(k)) this.pendingCount--;
    p.events.set(k, e);
    this.pendingCount++;
    if (this.pendingCount >= this.coalesce.fullAt) return this.flushPending();
    if (!this.pendingTimer) this.scheduleFlush();
    return undefined;
  }

  /** Waits as {@link coalesceWaitMs} decides, re-deciding when the wait ends; flushes when it says 0. */
  private scheduleFlush(): void {
    const now = performance.now();
    const wait = coalesceWaitMs(
      {
        pending: this.pendingCount,
        ageMs: now - this.pendingSince,
        ratePerSec: arrivalRate(this.arrivals, now, this.coalesce.maxDelayMs, this.coalesce.windowMs),
      },
      this.coalesce,
    );
    if (wait < 1) {
      this.pendingTimer = undefined;
      this.flushPending().catch((err) => this.o.log.error({ err }, 'handling live changes failed'));
      return;
    }
    this.pendingTimer = setTimeout(() => {
      this.pendingTimer = undefined;
      if (this.pendingCount > 0) this.scheduleFlush();
    }, wait);
  }

  /** Maps every waiting change (one jq call per source), then hands all entities over at once. */
  private async flushPending(): Promise<void> {
    // One flush at a time, so a later window never overtakes an earlier one.
    while (this.flushing) await this.flushing;
    if (this.pendingTimer) clearTimeout(this.pendingTimer);
    this.pendingTimer = undefined;
    if (this.pendingCount === 0 || this.stopped) return;
    const batches = [...this.pending.entries()].map(([source, p]) => ({
      source,
      ...p,
      events: [...p.events.values()],
    }));
    this.pending.clear();
    this.pendingCount = 0;
    this.flushing = (async () => {
      const mapped: Array<() => void> = [];
      for (const b of batches) mapped.push(await this.prepare(b.source, b.program, b.log, b.events));
      // Applied together, so the sink sees the whole window in one go.
      for (const apply of mapped) apply();
    })().finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  private async handle(source: string, program: CompiledResource, log: Logger, events: WatchEvent[]): Promise<void> {
    (await this.prepare(source, program, log, events))();
  }

  /** Maps the upserts among `events`; the returned function applies deletes and results in order. */
  private async prepare(
    source: string,
    program: CompiledResource,
    log: Logger,
    events: WatchEvent[],
  ): Promise<() => void> {
    const upserts = events.flatMap((e) => (e.type === 'upsert' ? [e.object] : []));
    const results = upserts.length ? await mapObjects(program, upserts, this.mapOptions) : [];
    return () => {
      for (const e of events) {
        if (e.type !== 'delete') continue;
        this.apply(source, e.object, []);
        this.mappingErrors.delete(`${source}|${objectKey(e.object)}`);
      }
      this.applyResults(source, log, upserts, results);
    };
  }

  private async mapAndApply(
    source: string,
    program: CompiledResource,
    log: Logger,
    objects: KubeObject[],
  ): Promise<void> {
    this.applyResults(source, log, objects, await mapObjects(program, objects, this.mapOptions));
  }

  private applyResults(source: string, log: Logger, objects: KubeObject[], results: MapResult[]): void {
    objects.forEach((obj: KubeObject, i) => {
      const r = results[i];
      const ok = objectKey(obj);
      const errKey = `${source}|${ok}`;
      if (!r.ok) {
        // Reported, not sent; whatever it mapped to before stays (a bad edit does not delete it).
        this.mappingErrors.set(errKey, r.error);
        log.warn({ object: ok, reason: r.error }, 'skipping object that failed to map');
        return;
      }
      this.mappingErrors.delete(errKey);
      this.apply(source, obj, r.entities);
    });
  }

  private apply(source: string, obj: KubeObject, entities: MappedEntity[]): void {
    const objKey = objectKey(obj);
    const origin: EntityOrigin = {
      cluster: source.split('|')[0],
      apiVersion: obj.apiVersion ?? '',
      kind: obj.kind ?? '',
      namespace: obj.metadata.namespace,
      name: obj.metadata.name,
    };
    let bySource = this.produced.get(source);
    if (!bySource) {
      bySource = new Map();
      this.produced.set(source, bySource);
    }
    const owner = ownerKey(source, objKey);
    const before = bySource.get(objKey) ?? [];
    const keys = [...new Set(entities.map(entityKey))];
    const now = new Set(keys);
    for (const m of entities) {
      this.blueprints.add(m.blueprint);
      this.o.sink.put(m, origin);
    }
    for (const k of keys) this.addOwner(k, owner);
    for (const k of before) {
      if (now.has(k)) continue;
      if (this.removeOwner(k, owner)) {
        const [blueprint, identifier] = k.split('\u0000');
        this.o.sink.remove(blueprint, identifier);
      }
    }
    // Only the keys: the sink holds the entities (compactly), this only finds what an object dropped.
    if (keys.length) bySource.set(objKey, keys);
    else bySource.delete(objKey);
  }

  private addOwner(entity: string, owner: string): void {
    const o = this.owners.get(entity);
    if (o === undefined) this.owners.set(entity, owner);
    else if (typeof o === 'string') {
      if (o !== owner) this.owners.set(entity, new Set([o, owner]));
    } else o.add(owner);
  }

  /** Drops `owner` from `entity`'s owners; true when no object maps to the entity any more. */
  private removeOwner(entity: string, owner: string): boolean {
    const o = this.owners.get(entity);
    if (o === undefined) return true;
    if (typeof o === 'string') {
      if (o !== owner) return false;
      this.owners.delete(entity);
      return true;
    }
    o.delete(owner);
    if (o.size > 1) return false;
    if (o.size === 1) {
      this.owners.set(entity, o.values().next().value as string);
      return false;
    }
    this.owners.delete(entity);
    return true;
  }

  private watchCrds(cluster: ClusterHandle, query: string): void {
    const source = `${cluster.name}|apiextensions.k8s.io/v1/customresourcedefinitions`;
    const log = this.o.log.child({ cluster: cluster.name, kind: 'customresourcedefinitions' });
    const onCrds = async (crds: Crd[]) => {
      const matches = await matchCrds(query, crds, this.env);
      crds.forEach((crd, i) => {
        if (!matches[i]) return;
        const { blueprint, resource } =
          this.o.config.dialect === 'port-k8s-exporter' ? crdToPortResource(crd) : crdToResource(crd);
        const id = `${cluster.name}|${resource.kind}`;
        if (this.discovered.has(id)) return;
        this.discovered.add(id);
        log.info({ crd: crd.metadata.name, blueprint: blueprint.identifier }, 'discovered CRD, watching it');
        this.blueprints.add(blueprint.identifier);
        this.o.sink.addBlueprint?.(blueprint);
        const url = this.o.config.actionsWebhookUrl;
        if (url) this.o.sink.addActions?.(crdToPortActions(crd, { webhookUrl: url, dialect: this.o.config.dialect }));
        this.watchResource(cluster, resource, '@discovered');
      });
    };
    const w = new ResourceWatcher({
      kc: cluster.kc,
      kind: parseKind('apiextensions.k8s.io/v1/customresourcedefinitions'),
      log,
      // A removed CRD keeps its watcher: it reports the deletes and picks the CRD up when re-added.
      onEvent: (e) =>
        e.type === 'page'
          ? onCrds(e.objects as unknown as Crd[])
          : e.type === 'upsert'
            ? onCrds([e.object as unknown as Crd])
            : undefined,
    });
    this.watchers.set(source, w);
    w.start();
  }

  describe(): string {
    return [...this.watchers.keys()].map((k) => k.replace('|', ' ')).join(', ') || kindString(parseKind('v1/none'));
  }
}
