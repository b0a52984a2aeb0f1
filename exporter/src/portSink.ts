import type { PortApi } from '@kpromo/port-client';
import { chunkByCountAndSize, chunksOf, MAX_BODY_BYTES, MAX_BULK_ENTITIES, staleIdentifiers } from './batching.js';
import type { BlueprintConfig } from './config.js';
import type { PortAction } from './crdActions.js';
import { interner } from './intern.js';
import type { Logger } from './log.js';
import { type MappedEntity, STATE_KEY_PROPERTY } from './mapEntity.js';
import { type ActionOutcome, syncAction } from './portActions.js';
import { toPortEntity } from './portClient.js';

export interface PortSinkOptions {
  api: PortApi;
  log: Logger;
  stateKey: string;
  blueprints: BlueprintConfig[];
  createBlueprints: boolean;
  concurrency: number;
  /** `delete_dependents` on delete calls (Port exporter's `deleteDependents`). Default false. */
  deleteDependents?: boolean;
  /** `create_missing_related_entities` on upserts. Default true. */
  createMissingRelatedEntities?: boolean;
  /** `merge=true` on upserts: properties not sent are kept, null ones cleared (as Port's exporter). Default false. */
  merge?: boolean;
  /**
   * How owned entities are found for stale deletion. `property` (default): the state-key property,
   * added to every blueprint used. `datasource`: Port's `$datasource` (set from the User-Agent,
   * `… (statekey/<key>)`), as Port's exporter does; blueprints are left unchanged.
   */
  ownership?: 'property' | 'datasource';
  /** With `datasource` ownership: datasource prefixes counted as this exporter's (default kpromo-exporter and port-k8s-exporter). */
  datasources?: string[];
  /** Replace existing Port actions of discovered CRDs (Port exporter's `overwriteCrdsActions`). Default false. */
  overwriteActions?: boolean;
}

export interface SinkStats {
  upserted: number;
  deleted: number;
  skippedUnchanged: number;
  failed: number;
}

/** One flat string (not a rope; see exporter.ts) per held entity. */
const key = (blueprint: string, id: string) => [blueprint, id].join('\u0000');
const splitKey = (k: string) => k.split('\u0000') as [string, string];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class TransientError extends Error {}

/**
 * A desired entity as the sink keeps it between sends: the fields it decides on, and the rest as
 * its JSON, parsed again only to send it (10,000 entities: V8 heap at the sync's peak 94 → 76 MiB).
 */
interface HeldEntity {
  blueprint: string;
  identifier: string;
  hash: string;
  /** Its identifier is a search query (never deleted by query). */
  byQuery: boolean;
  json: string;
}
const hold = (m: MappedEntity, same: ReturnType<typeof interner>): HeldEntity => ({
  blueprint: same(m.blueprint),
  identifier: m.entity.identifier,
  hash: m.hash,
  byQuery: !!m.request && typeof m.request.identifier !== 'string',
  json: JSON.stringify(m),
});
const expand = (h: HeldEntity): MappedEntity => JSON.parse(h.json) as MappedEntity;

/**
 * Level-triggered mirror of the desired entity set into Port. Events only update `desired` and
 * mark keys dirty; a single loop diffs dirty keys against what Port was last told (`synced`).
 * While Port is down the pending work is the dirty set, bounded by the number of entities and
 * coalesced per entity, so nothing is lost and memory does not grow with the event rate.
 */
export class PortSink {
  private readonly desired = new Map<string, HeldEntity>();
  private readonly same = interner();
  /** Hash Port holds per key; '' means "may exist in Port" (delete it if not desired). */
  private readonly synced = new Map<string, string>();
  private readonly dirty = new Set<string>();
  /** Permanent per-entity failures (4xx) keyed to the hash that failed; retried when the entity changes. */
  private readonly failed = new Map<string, string>();
  private readonly ensured = new Map<string, Promise<void>>();
  private readonly blueprintOrder: string[];
  private readonly blueprintConfigs: BlueprintConfig[];
  private running = false;
  private stopped = false;
  private wake?: () => void;
  private idleWaiters: Array<() => void> = [];
  private transientErrors = 0;
  /** Search-query identifiers → the identifier Port resolved them to. */
  private readonly resolved = new Map<string, string>();
  readonly stats: SinkStats = { upserted: 0, deleted: 0, skippedUnchanged: 0, failed: 0 };
  /** What became of each action definition handed over (crdsToDiscover), by identifier. */
  readonly actions = new Map<string, Promise<ActionOutcome>>();

  constructor(private readonly o: PortSinkOptions) {
    this.blueprintConfigs = [...o.blueprints];
    this.blueprintOrder = o.blueprints.map((b) => b.identifier);
  }

  /** A blueprint discovered at runtime (crdsToDiscover), created on first use. */
  addBlueprint(bp: BlueprintConfig): void {
    if (this.blueprintConfigs.some((b) => b.identifier === bp.identifier)) return;
    this.blueprintConfigs.push(bp);
    this.blueprintOrder.push(bp.identifier);
  }

  /**
   * Self-service actions of a discovered CRD: created in Port once their blueprint exists (Port
   * refuses an action on a missing blueprint), existing ones replaced only with `overwriteActions`.
   */
  addActions(actions: PortAction[]): void {
    for (const a of actions) {
      if (this.actions.has(a.identifier)) continue;
      const bp = a.trigger.blueprintIdentifier;
      const ready = this.ensureBlueprint(bp);
      this.actions.set(
        a.identifier,
        ready.then(
          () => syncAction(this.o.api, a, this.o.overwriteActions ?? false, this.o.log),
          (e: Error) => {
            this.o.log.error(
              { action: a.identifier, blueprint: bp, err: e.message },
              'action not created: no blueprint',
            );
            return 'failed' as const;
          },
        ),
      );
    }
  }

  put(m: MappedEntity): void {
    const k = key(m.blueprint, m.entity.identifier);
    const prev = this.desired.get(k);
    this.desired.set(k, hold(m, this.same));
    if (prev?.hash !== m.hash || this.synced.get(k) !== m.hash) this.markDirty(k);
    else this.stats.skippedUnchanged++;
  }

  remove(blueprint: string, identifier: string): void {
    const k = key(blueprint, identifier);
    const prev = this.desired.get(k);
    this.desired.delete(k);
    if (prev?.byQuery) {
      // Port's exporter never deletes by a search query (controller.go, entityHandler): a resync
      // removes the entity it resolved to once nothing maps to it.
      this.synced.delete(k);
      this.dirty.delete(k);
      return;
    }
    if (!this.synced.has(k)) this.synced.set(k, '');
    this.markDirty(k);
  }

  /** Desired identifiers per blueprint (what the cluster state maps to). */
  desiredIdentifiers(blueprint: string): Set<string> {
    const out = new Set<string>();
    for (const [k, m] of this.desired) {
      if (m.blueprint !== blueprint) continue;
      out.add(m.identifier);
      const r = this.resolved.get(k);
      if (r) out.add(r);
    }
    return out;
  }

  get pending(): number {
    return this.dirty.size;
  }

  get failures(): ReadonlyMap<string, string> {
    return this.failed;
  }

  private markDirty(k: string): void {
    this.dirty.add(k);
    this.wake?.();
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    void this.loop();
  }

  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  /** Resolves once every dirty key has been written (or permanently failed). */
  idle(): Promise<void> {
    if (this.dirty.size === 0 && !this.busy) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private busy = false;

  private async loop(): Promise<void> {
    let backoff = 500;
    while (!this.stopped) {
      if (this.dirty.size === 0) {
        for (const w of this.idleWaiters.splice(0)) w();
        await new Promise<void>((r) => {
          this.wake = r;
        });
        this.wake = undefined;
        continue;
      }
      this.busy = true;
      const ok = await this.flushOnce().catch((e) => {
        this.o.log.error({ err: e }, 'port flush failed');
        return false;
      });
      this.busy = false;
      if (ok) backoff = 500;
      else {
        // Port unreachable or overloaded beyond the client's retries: wait, keep the dirty set.
        this.o.log.warn({ pending: this.dirty.size, backoffMs: backoff }, 'port unavailable, will retry');
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 30_000);
      }
    }
  }

  private order(bp: string): number {
    const i = this.blueprintOrder.indexOf(bp);
    return i < 0 ? this.blueprintOrder.length : i;
  }

  /**
   * One pass over the dirty keys; false when some work failed transiently and was requeued. Held
   * entities are expanded only as their bulk call is assembled (at most `concurrency` chunks at a
   * time), not all at once: after an initial list, tens of thousands are dirty together.
   */
  private async flushOnce(): Promise<boolean> {
    const keys = [...this.dirty];
    this.dirty.clear();
    const upserts = new Map<string, string[]>();
    const deletes = new Map<string, string[]>();
    const listFor = (m: Map<string, string[]>, bp: string) => {
      let l = m.get(bp);
      if (!l) {
        l = [];
        m.set(bp, l);
      }
      return l;
    };
    for (const k of keys) {
      const want = this.desired.get(k);
      const [bp, id] = splitKey(k);
      if (want) {
        if (this.synced.get(k) === want.hash) {
          this.stats.skippedUnchanged++;
          continue;
        }
        if (this.failed.get(k) === want.hash) continue;
        listFor(upserts, bp).push(k);
      } else if (this.synced.has(k)) {
        listFor(deletes, bp).push(id);
      }
    }
    let ok = true;
    const bps = [...upserts.keys()].sort((a, b) => this.order(a) - this.order(b));
    // Upserts blueprint by blueprint in config order, so relation targets tend to exist first.
    for (const bp of bps) {
      const bpKeys = upserts.get(bp)!;
      try {
        await this.ensureBlueprint(bp);
      } catch (e) {
        ok = this.requeueOrFail(e, bpKeys) && ok;
        continue;
      }
      const chunks = chunksOf(
        this.expanded(bpKeys),
        MAX_BULK_ENTITIES,
        MAX_BODY_BYTES,
        (m) => Buffer.byteLength(JSON.stringify(m.request ?? m.entity)),
        (m) => this.fail(key(bp, m.entity.identifier), 'entity exceeds the 1 MiB request limit'),
      );
      const results = await this.parallel(chunks, (chunk) => this.upsertChunk(bp, chunk));
      if (results.includes(false)) ok = false;
    }
    const delBps = [...deletes.keys()].sort((a, b) => this.order(b) - this.order(a));
    for (const bp of delBps) {
      const results = await this.parallel(chunkByCountAndSize(deletes.get(bp)!, 100).chunks, (ids) =>
        this.deleteIds(bp, ids),
      );
      if (results.includes(false)) ok = false;
    }
    return ok;
  }

  /** The entities held for `keys` now, as they are asked for (a key no longer desired is left out: its removal marked it dirty again). */
  private *expanded(keys: readonly string[]): Generator<MappedEntity> {
    for (const k of keys) {
      const want = this.desired.get(k);
      if (want) yield expand(want);
    }
  }

  /** Runs `fn` over `items` with at most `concurrency` at a time, taking the next item only when a worker is free. */
  private async parallel<T>(items: Iterable<T>, fn: (t: T) => Promise<boolean>): Promise<boolean[]> {
    const out: boolean[] = [];
    const it = items[Symbol.iterator]();
    const worker = async () => {
      for (let n = it.next(); !n.done; n = it.next()) out.push(await fn(n.value));
    };
    await Promise.all(Array.from({ length: this.o.concurrency }, worker));
    return out;
  }

  private requeueOrFail(e: unknown, keys: string[]): boolean {
    if (e instanceof TransientError || !(e instanceof Error) || !('permanent' in e)) {
      for (const k of keys) this.dirty.add(k);
      this.transientErrors++;
      return false;
    }
    for (const k of keys) this.fail(k, e.message);
    return true;
  }

  private fail(k: string, message: string, hash = this.desired.get(k)?.hash ?? ''): void {
    this.failed.set(k, hash);
    this.stats.failed++;
    const [bp, id] = splitKey(k);
    this.o.log.error({ blueprint: bp, identifier: id, reason: message }, 'port rejected entity');
  }

  private markSynced(bp: string, id: string, sentHash: string | undefined): void {
    const k = key(bp, id);
    if (sentHash === undefined) return;
    this.synced.set(k, sentHash);
    this.failed.delete(k);
    this.stats.upserted++;
  }

  private upsertQuery() {
    return {
      upsert: true,
      ...(this.o.merge ? { merge: true } : {}),
      create_missing_related_entities: this.o.createMissingRelatedEntities ?? true,
    };
  }

  private async upsertChunk(bp: string, items: MappedEntity[]): Promise<boolean> {
    const chunk = items.map((m) => m.entity);
    const hashes = items.map((m) => m.hash);
    let res: Awaited<ReturnType<PortApi['POST']>>;
    try {
      res = await this.o.api.POST('/v1/blueprints/{blueprint_identifier}/entities/bulk', {
        params: { path: { blueprint_identifier: bp }, query: this.upsertQuery() },
        body: { entities: items.map(toPortEntity) },
      });
    } catch (e) {
      for (const en of chunk) this.dirty.add(key(bp, en.identifier));
      this.o.log.warn({ err: (e as Error).message, blueprint: bp }, 'bulk upsert failed');
      return false;
    }
    const status = res.response.status;
    if (status === 429 || status >= 500) {
      for (const en of chunk) this.dirty.add(key(bp, en.identifier));
      return false;
    }
    const data = res.data as
      | { entities: Array<{ identifier: string; index: number }>; errors: Array<{ index: number; message: string }> }
      | undefined;
    if (data && (status === 200 || status === 207)) {
      for (const e of data.entities) {
        this.markSynced(bp, chunk[e.index].identifier, hashes[e.index]);
        if (e.identifier !== chunk[e.index].identifier)
          this.resolved.set(key(bp, chunk[e.index].identifier), e.identifier);
      }
      if (data.errors.length === 0) return true;
      // 207: retry the failed ones one by one so one bad entity cannot block its neighbours.
      let ok = true;
      for (const err of data.errors) ok = (await this.upsertOne(bp, items[err.index], hashes[err.index])) && ok;
      return ok;
    }
    // Whole request rejected (413/422/404…): fall back to single upserts to isolate the culprit.
    let ok = true;
    for (let i = 0; i < items.length; i++) ok = (await this.upsertOne(bp, items[i], hashes[i])) && ok;
    return ok;
  }

  private async upsertOne(bp: string, m: MappedEntity, hash: string | undefined): Promise<boolean> {
    const entity = m.entity;
    const k = key(bp, entity.identifier);
    try {
      const res = await this.o.api.POST('/v1/blueprints/{blueprint_identifier}/entities', {
        params: { path: { blueprint_identifier: bp }, query: this.upsertQuery() },
        body: toPortEntity(m),
      });
      const status = res.response.status;
      if (status < 300) {
        this.markSynced(bp, entity.identifier, hash);
        const got = (res.data as { entity?: { identifier?: unknown } } | undefined)?.entity?.identifier;
        if (typeof got === 'string' && got !== entity.identifier) this.resolved.set(k, got);
        return true;
      }
      if (status === 429 || status >= 500) {
        this.dirty.add(k);
        return false;
      }
      this.fail(k, `HTTP ${status}: ${JSON.stringify(res.error)}`, hash);
      return true;
    } catch (e) {
      this.dirty.add(k);
      this.o.log.warn({ err: (e as Error).message, blueprint: bp, identifier: entity.identifier }, 'upsert failed');
      return false;
    }
  }

  private async deleteIds(bp: string, ids: string[]): Promise<boolean> {
    const done = (id: string) => {
      const k = key(bp, id);
      this.synced.delete(k);
      this.failed.delete(k);
      this.stats.deleted++;
    };
    try {
      if (ids.length > 1) {
        const res = await this.o.api.POST('/v1/blueprints/{blueprint_identifier}/bulk/entities/delete', {
          params: {
            path: { blueprint_identifier: bp },
            query: { delete_dependents: this.o.deleteDependents ?? false },
          },
          body: { entities: ids },
        });
        if (res.data) {
          for (const id of ids) done(id);
          return true;
        }
        if (res.response.status === 429 || res.response.status >= 500)
          throw new TransientError(`HTTP ${res.response.status}`);
        // Some id is missing or has dependents: the bulk call is all-or-nothing, so go one by one.
      }
      let ok = true;
      for (const id of ids) {
        const res = await this.o.api.DELETE('/v1/blueprints/{blueprint_identifier}/entities/{entity_identifier}', {
          params: {
            path: { blueprint_identifier: bp, entity_identifier: id },
            query: { delete_dependents: this.o.deleteDependents ?? false },
          },
        });
        const s = res.response.status;
        if (s < 300 || s === 404) done(id);
        else if (s === 429 || s >= 500) {
          this.dirty.add(key(bp, id));
          ok = false;
        } else {
          this.o.log.error({ blueprint: bp, identifier: id, status: s, error: res.error }, 'port refused delete');
          this.synced.delete(key(bp, id));
          this.stats.failed++;
        }
      }
      return ok;
    } catch (e) {
      for (const id of ids) this.dirty.add(key(bp, id));
      this.o.log.warn({ err: (e as Error).message, blueprint: bp }, 'delete failed');
      return false;
    }
  }

  ensureBlueprint(bp: string, visiting: ReadonlySet<string> = new Set()): Promise<void> {
    let p = this.ensured.get(bp);
    if (!p) {
      p = this.doEnsureBlueprint(bp, new Set([...visiting, bp]));
      this.ensured.set(bp, p);
      p.catch(() => this.ensured.delete(bp));
    }
    return p;
  }

  /**
   * Creates a configured blueprint when missing. An existing one gets the state-key property when
   * absent and, when this exporter creates blueprints, the configured properties it lacks (a
   * blueprint created by an older version, before a property was added: Port refuses entities with
   * properties their blueprint does not have). Existing properties are never changed.
   */
  private async doEnsureBlueprint(bp: string, visiting: ReadonlySet<string>): Promise<void> {
    const got = await this.o.api.GET('/v1/blueprints/{identifier}', { params: { path: { identifier: bp } } });
    const status = got.response.status;
    if (status === 429 || status >= 500) throw new TransientError(`GET blueprint ${bp}: HTTP ${status}`);
    const cfg = this.blueprintConfigs.find((b) => b.identifier === bp);
    const stateProp = { [STATE_KEY_PROPERTY]: { title: 'Exporter state key', type: 'string' as const } };
    if (got.data) {
      const props = (got.data.blueprint.schema as { properties?: Record<string, unknown> }).properties ?? {};
      const add: Record<string, unknown> = {};
      if (this.o.ownership !== 'datasource' && !(STATE_KEY_PROPERTY in props)) Object.assign(add, stateProp);
      if (cfg && this.o.createBlueprints)
        for (const [k, v] of Object.entries(cfg.schema.properties ?? {})) if (!(k in props)) add[k] = v;
      if (!Object.keys(add).length) return;
      const res = await this.o.api.PATCH('/v1/blueprints/{identifier}', {
        params: { path: { identifier: bp } },
        body: { schema: { properties: { ...props, ...add } } } as never,
      });
      if (!res.data)
        throw Object.assign(
          new Error(`cannot add ${Object.keys(add).join(', ')} to blueprint ${bp}: HTTP ${res.response.status}`),
          { permanent: true },
        );
      this.o.log.info({ blueprint: bp, added: Object.keys(add) }, 'blueprint properties added');
      return;
    }
    if (!cfg || !this.o.createBlueprints) {
      throw Object.assign(new Error(`blueprint ${bp} does not exist in Port and is not configured for creation`), {
        permanent: true,
      });
    }
    // Port refuses relations to blueprints that do not exist yet: create the targets first.
    for (const rel of Object.values(cfg.relations ?? {})) {
      if (!visiting.has(rel.target) && this.blueprintConfigs.some((b) => b.identifier === rel.target)) {
        await this.ensureBlueprint(rel.target, visiting);
      }
    }
    const res = await this.o.api.POST('/v1/blueprints', {
      body: {
        identifier: cfg.identifier,
        title: cfg.title,
        ...(cfg.icon ? { icon: cfg.icon } : {}),
        schema: {
          properties: { ...cfg.schema.properties, ...(this.o.ownership === 'datasource' ? {} : stateProp) },
          required: cfg.schema.required ?? [],
        },
        relations: cfg.relations ?? {},
      } as never,
    });
    if (res.response.status === 429 || res.response.status >= 500)
      throw new TransientError(`create blueprint ${bp}: HTTP ${res.response.status}`);
    if (!res.data)
      throw Object.assign(
        new Error(`cannot create blueprint ${bp}: HTTP ${res.response.status} ${JSON.stringify(res.error)}`),
        { permanent: true },
      );
    this.o.log.info({ blueprint: bp }, 'blueprint created');
  }

  /**
   * Which entities are this exporter's. Datasource ownership follows Port's exporter
   * (pkg/port/cli/entity.go, DeleteStaleEntities): the datasource names the exporter and ends in
   * `(statekey/<key>)`; entities Port's own exporter made under the same state key count too, so a
   * migration takes them over.
   */
  private ownedQuery() {
    if (this.o.ownership !== 'datasource')
      return { combinator: 'and', rules: [{ property: STATE_KEY_PROPERTY, operator: '=', value: this.o.stateKey }] };
    const names = this.o.datasources ?? ['kpromo-exporter', 'port-k8s-exporter'];
    return {
      combinator: 'and',
      rules: [
        { property: '$datasource', operator: 'contains', value: `(statekey/${this.o.stateKey})` },
        { combinator: 'or', rules: names.map((n) => ({ property: '$datasource', operator: 'contains', value: n })) },
      ],
    };
  }

  /** Identifiers of entities in `bp` this exporter owns. */
  async ownedIdentifiers(bp: string): Promise<string[]> {
    const ids: string[] = [];
    let from: string | undefined;
    do {
      const res = await this.o.api.POST('/v1/blueprints/{blueprint_identifier}/entities/search', {
        params: { path: { blueprint_identifier: bp } },
        body: {
          query: this.ownedQuery(),
          include: ['$identifier'],
          limit: 1000,
          ...(from ? { from } : {}),
        } as never,
      });
      if (res.response.status === 404) return ids;
      if (!res.data) throw new Error(`search ${bp} failed: HTTP ${res.response.status}`);
      for (const e of res.data.entities) if (typeof e.identifier === 'string') ids.push(e.identifier);
      from = res.data.next;
    } while (from);
    return ids;
  }

  /**
   * Full resync: waits for pending writes, then deletes owned entities that no longer map from the
   * cluster. Skipped when anything failed during this sync, since a partial picture could delete
   * live entities.
   */
  async resync(blueprints: string[], mappingErrors: number): Promise<{ deleted: number; skipped?: string }> {
    this.transientErrors = 0;
    await this.idle();
    if (mappingErrors > 0) return { deleted: 0, skipped: `${mappingErrors} objects failed to map` };
    if (this.failed.size > 0 || this.transientErrors > 0)
      return { deleted: 0, skipped: `${this.failed.size} entities failed to sync` };
    let deleted = 0;
    for (const bp of blueprints) {
      const stale = staleIdentifiers(await this.ownedIdentifiers(bp), this.desiredIdentifiers(bp));
      for (const id of stale) this.remove(bp, id);
      deleted += stale.length;
    }
    await this.idle();
    return { deleted };
  }
}
