import type * as k8s from '@kubernetes/client-node';
import type { ExporterConfig, ResourceConfig } from './config.js';
import { type Crd, crdToResource, matchCrds } from './discoverCrds.js';
import type { Logger } from './log.js';
import { compileResource, type MappedEntity, mapObjects } from './mapEntity.js';
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
}

const entityKey = (m: MappedEntity) => `${m.blueprint}\u0000${m.entity.identifier}`;

/**
 * Watches every configured resource in every cluster, maps objects to entities and keeps the sink's
 * desired set equal to the mapped cluster state. An entity may come from several objects
 * (itemsToParse), so it is removed only when no object maps to it any more.
 */
export class Exporter {
  private readonly watchers = new Map<string, ResourceWatcher>();
  /** source (cluster|kind#index) → object key → entity keys it produced. */
  private readonly produced = new Map<string, Map<string, MappedEntity[]>>();
  private readonly owners = new Map<string, Set<string>>();
  /** Objects whose mapping failed, with the reason (skipped, and resync holds deletes). */
  readonly mappingErrors = new Map<string, string>();
  private readonly blueprints = new Set<string>();
  private readonly discovered = new Set<string>();

  constructor(private readonly o: ExporterOptions) {
    for (const b of o.config.blueprints) this.blueprints.add(b.identifier);
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
    for (const w of this.watchers.values()) w.stop();
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
    const program = compileResource(res)(cluster.name);
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

  private async onEvent(source: string, program: string, log: Logger, e: WatchEvent): Promise<void> {
    if (e.type === 'delete') {
      this.apply(source, e.object, []);
      this.mappingErrors.delete(`${source}|${objectKey(e.object)}`);
      return;
    }
    const objects = e.type === 'synced' ? e.objects : [e.object];
    const results = await mapObjects(program, objects, this.o.config.stateKey);
    objects.forEach((obj: KubeObject, i) => {
      const r = results[i];
      const ok = objectKey(obj);
      const errKey = `${source}|${ok}`;
      if (!r.ok) {
        // Keep whatever it mapped to before: a bad edit should not delete the entity.
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
    const owner = `${source}|${objKey}`;
    const before = bySource.get(objKey) ?? [];
    const now = new Set(entities.map(entityKey));
    for (const m of entities) {
      this.blueprints.add(m.blueprint);
      let set = this.owners.get(entityKey(m));
      if (!set) {
        set = new Set();
        this.owners.set(entityKey(m), set);
      }
      set.add(owner);
      this.o.sink.put(m, origin);
    }
    for (const m of before) {
      const k = entityKey(m);
      if (now.has(k)) continue;
      const set = this.owners.get(k);
      set?.delete(owner);
      if (!set || set.size === 0) {
        this.owners.delete(k);
        this.o.sink.remove(m.blueprint, m.entity.identifier);
      }
    }
    if (entities.length) bySource.set(objKey, entities);
    else bySource.delete(objKey);
  }

  private watchCrds(cluster: ClusterHandle, query: string): void {
    const source = `${cluster.name}|apiextensions.k8s.io/v1/customresourcedefinitions`;
    const log = this.o.log.child({ cluster: cluster.name, kind: 'customresourcedefinitions' });
    const onCrds = async (crds: Crd[]) => {
      const matches = await matchCrds(query, crds);
      crds.forEach((crd, i) => {
        if (!matches[i]) return;
        const { blueprint, resource } = crdToResource(crd);
        const id = `${cluster.name}|${resource.kind}`;
        if (this.discovered.has(id)) return;
        this.discovered.add(id);
        log.info({ crd: crd.metadata.name, blueprint: blueprint.identifier }, 'discovered CRD, watching it');
        this.blueprints.add(blueprint.identifier);
        this.o.sink.addBlueprint?.(blueprint);
        this.watchResource(cluster, resource, '@discovered');
      });
    };
    const w = new ResourceWatcher({
      kc: cluster.kc,
      kind: parseKind('apiextensions.k8s.io/v1/customresourcedefinitions'),
      log,
      // A removed CRD keeps its watcher: it reports the deletes and picks the CRD up when re-added.
      onEvent: (e) =>
        e.type === 'synced'
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
