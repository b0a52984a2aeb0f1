import * as k8s from '@kubernetes/client-node';
import { fetch } from 'undici';
import type { HelmRelease, ImageWriter, Workload } from './cacheView.js';
import { isGone, KubeError, type KubeRest } from './rest.js';

export interface KObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; generation?: number; uid?: string };
}

export type InformerEvent = 'add' | 'update' | 'delete';
export type InformerHandler<T> = (type: InformerEvent, obj: T) => void;

export interface InformerLog {
  warn(obj: object, msg: string): void;
  info?(obj: object, msg: string): void;
  debug?(obj: object, msg: string): void;
}

export interface InformerOptions<T> {
  /** Cap of the retry backoff after failures (default 30 s). */
  maxBackoffMs?: number;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * What is kept of each listed/watched object (drop what the controller never reads); the store
   * holds the result and handlers receive that same object. Default: {@link withoutManagedFields}.
   */
  transform?: (obj: T) => T;
  /** Server-side watch duration, randomised in [min, max] seconds like client-go's reflector (default 300-600). */
  watchTimeoutSeconds?: readonly [number, number];
  /**
   * A watch that received no byte (event or bookmark) for this long is presumed dead and reopened
   * from its resourceVersion. The apiserver sends a bookmark about every minute on a quiet watch
   * (the first one sometimes only after two), so this must stay well above that (default 180 s).
   */
  inactivityMs?: number;
  /** Items per page when listing (default 500). */
  pageSize?: number;
  /**
   * Which objects belong in the store (checked before `transform`): the others are not kept, and one
   * that stops being accepted is reported deleted. For filters the apiserver cannot apply (a shard's
   * namespaces); call {@link Informer.relistNow} when its answer may have changed.
   */
  accept?: (obj: T) => boolean;
}

export const objectKey = (o: KObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

const DEFAULT_WATCH_TIMEOUT: readonly [number, number] = [300, 600];
const DEFAULT_INACTIVITY_MS = 180_000;
const CONNECT_TIMEOUT_MS = 30_000;
/** A watch that ends this fast without delivering anything counts as a failure (no hot reconnect loop). */
const SHORT_WATCH_MS = 1_000;

/** Why one watch connection ended. */
type WatchEnd = 'closed' | 'gone' | 'inactive' | 'stopped' | 'restart';

/**
 * List+watch of one collection path with its own store.
 * - Watches are long: server-side `timeoutSeconds` randomised in 5-10 min, `allowWatchBookmarks`, and
 *   a client-side inactivity limit well above the apiserver's ~1/min bookmarks, so a quiet healthy
 *   watch is neither closed nor reopened in between.
 * - When a watch ends (server timeout, inactivity, connection error) it resumes from the last
 *   resourceVersion seen (events and bookmarks move it) without listing again.
 * - It lists again only at start, on 410 Gone ("too old resource version") and after an HTTP error
 *   from the apiserver, which may mean events were lost. Failures back off exponentially with jitter,
 *   capped. On relist, objects that disappeared meanwhile are reported as deletes.
 * - Each object goes through `transform` before it is stored: one slim copy per object.
 */
export class Informer<T extends KObject> {
  private readonly store = new Map<string, T>();
  private resourceVersion = '';
  private abort?: AbortController;
  /** The open watch connection, and whether {@link restartWatch} ended it. */
  private watchAbort?: AbortController;
  private restartRequested = false;
  private relistRequested = false;
  /** Callers of relistNow, told when a list that saw their request has been applied. */
  private relistWaiters: Array<() => void> = [];
  private stopped = true;
  /** Incremented by start/stop, so a loop from before a stop()+start() exits. */
  private generation = 0;
  private synced = false;
  private failures = 0;
  private readonly handlers: InformerHandler<T>[] = [];
  private readonly stateHandlers: Array<() => void> = [];
  private syncWaiters: Array<() => void> = [];
  private readonly transform: (obj: T) => T;
  lastError?: string;
  /** HTTP status of the last failure, when the apiserver answered one (e.g. 403). */
  lastErrorStatus?: number;
  /** Lists and watch connections opened so far (for tests and diagnostics). */
  readonly stats = { lists: 0, watches: 0, relistsAfterGone: 0, bookmarks: 0 };

  constructor(
    private readonly rest: KubeRest,
    /** Collection path, e.g. /apis/apps/v1/namespaces/shop/deployments. */
    readonly path: string,
    private readonly log?: InformerLog,
    private readonly opts: InformerOptions<T> = {},
  ) {
    this.transform = opts.transform ?? withoutManagedFields;
  }

  on(h: InformerHandler<T>): void {
    this.handlers.push(h);
  }

  /** Called when the informer first syncs and whenever `lastError` changes (set or cleared). */
  onState(h: () => void): void {
    this.stateHandlers.push(h);
  }
  private setError(err: string | undefined, status?: number) {
    this.lastErrorStatus = err === undefined ? undefined : status;
    if (err === this.lastError) return;
    this.lastError = err;
    this.emitState();
  }
  private emitState() {
    for (const h of this.stateHandlers) {
      try {
        h();
      } catch (e) {
        this.log?.warn({ err: String(e), path: this.path }, 'informer state handler threw');
      }
    }
  }

  list(): T[] {
    return [...this.store.values()];
  }
  get(namespace: string | undefined, name: string): T | undefined {
    return this.store.get(`${namespace ?? ''}/${name}`);
  }
  get size(): number {
    return this.store.size;
  }
  get hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves after the first successful list. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.syncWaiters.push(resolve);
      signal?.addEventListener('abort', () => reject(new Error(`informer ${this.path} sync aborted`)));
    });
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const gen = ++this.generation;
    void this.loop(gen);
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.relistWaiters.splice(0)) w();
    this.generation++;
    this.abort?.abort();
  }

  /**
   * Ends the open watch connection; the informer reconnects at once from `fromResourceVersion`
   * (default: the last one seen), as after a server-side timeout. For tests and diagnostics.
   */
  restartWatch(fromResourceVersion?: string): void {
    if (fromResourceVersion !== undefined) this.resourceVersion = fromResourceVersion;
    this.restartRequested = true;
    this.watchAbort?.abort();
  }

  /**
   * Lists again at once (the store and handlers learn the differences), e.g. after the `accept`
   * filter changed its mind; resolves once a list begun after this call has been applied (or on stop).
   */
  relistNow(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    // A list in progress may have filtered its first pages the old way: it lists again when done.
    this.relistRequested = true;
    const done = new Promise<void>((resolve) => this.relistWaiters.push(resolve));
    this.restartWatch('');
    return done;
  }

  private accepted(obj: T): boolean {
    return this.opts.accept ? this.opts.accept(obj) : true;
  }

  private emit(type: InformerEvent, obj: T) {
    for (const h of this.handlers) {
      try {
        h(type, obj);
      } catch (e) {
        this.log?.warn({ err: String(e), path: this.path }, 'informer handler threw');
      }
    }
  }

  private query(extra: Record<string, string | number | boolean | undefined>) {
    return { labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector, ...extra };
  }

  /** Lists the collection (paged), replaces the store and reports the differences. */
  private async relist(signal: AbortSignal): Promise<void> {
    this.relistRequested = false;
    const fresh = new Map<string, T>();
    let cont: string | undefined;
    let rv = '';
    do {
      this.stats.lists++;
      const page = await this.rest.request<{
        kind?: string;
        apiVersion?: string;
        items: T[];
        metadata: { resourceVersion: string; continue?: string };
      }>('GET', this.path, {
        query: this.query({ limit: this.opts.pageSize ?? 500, continue: cont }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(60_000)]),
      });
      if (!rv) rv = page.metadata.resourceVersion;
      // Items of a built-in kind's list carry no kind/apiVersion; watch events do. Make them alike.
      const kind = page.kind?.endsWith('List') ? page.kind.slice(0, -4) : undefined;
      for (const raw of page.items) {
        if (kind && !raw.kind) raw.kind = kind;
        if (page.apiVersion && !raw.apiVersion) raw.apiVersion = page.apiVersion;
        if (!this.accepted(raw)) continue;
        const key = objectKey(raw);
        const prev = this.store.get(key);
        // Unchanged since we stored it: keep the copy we have.
        fresh.set(
          key,
          prev && prev.metadata.resourceVersion === raw.metadata.resourceVersion ? prev : this.transform(raw),
        );
      }
      cont = page.metadata.continue || undefined;
    } while (cont);
    if (signal.aborted) return;
    const old = new Map(this.store);
    this.store.clear();
    for (const [k, v] of fresh) this.store.set(k, v);
    for (const [key, obj] of fresh) {
      const prev = old.get(key);
      if (!prev) this.emit('add', obj);
      else if (prev !== obj) this.emit('update', obj);
    }
    for (const [key, obj] of old) if (!fresh.has(key)) this.emit('delete', obj);
    this.resourceVersion = this.relistRequested ? '' : rv;
    if (!this.relistRequested) for (const w of this.relistWaiters.splice(0)) w();
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
      this.emitState();
    }
    this.setError(undefined);
  }

  private apply(type: string, raw: T) {
    const key = objectKey(raw);
    if (type !== 'DELETED' && !this.accepted(raw)) {
      // Not (or no longer) ours: forget it as if deleted.
      const prev = this.store.get(key);
      if (prev) {
        this.store.delete(key);
        this.emit('delete', prev);
      }
      return;
    }
    if (type === 'DELETED') {
      if (this.opts.accept && !this.store.has(key)) return;
      this.store.delete(key);
      // The event carries the object's last state.
      this.emit('delete', this.transform(raw));
      return;
    }
    const obj = this.transform(raw);
    const existed = this.store.has(key);
    this.store.set(key, obj);
    this.emit(existed ? 'update' : 'add', obj);
  }

  /**
   * One watch connection from `resourceVersion`; resolves when it ends without an HTTP error
   * (server timeout, 410 Gone, inactivity, stop) and rejects on connection or HTTP errors.
   */
  private async watchOnce(signal: AbortSignal): Promise<{ end: WatchEnd; events: number }> {
    const [lo, hi] = this.opts.watchTimeoutSeconds ?? DEFAULT_WATCH_TIMEOUT;
    const timeoutSeconds = lo + Math.floor(Math.random() * (hi - lo + 1));
    const inactivityMs = this.opts.inactivityMs ?? DEFAULT_INACTIVITY_MS;
    const ac = new AbortController();
    this.watchAbort = ac;
    this.restartRequested = false;
    const onStop = () => ac.abort();
    signal.addEventListener('abort', onStop, { once: true });
    let lastData = Date.now();
    let limit = CONNECT_TIMEOUT_MS;
    let inactive = false;
    // One cheap periodic check instead of re-arming a timer for every chunk.
    const check = setInterval(
      () => {
        if (Date.now() - lastData > limit) {
          inactive = true;
          ac.abort();
        }
      },
      Math.max(50, Math.min(5_000, Math.floor(inactivityMs / 10))),
    );
    check.unref();
    let events = 0;
    let gone = false;
    let connected = false;
    try {
      this.stats.watches++;
      const res = await openWatch(
        this.rest,
        this.path,
        this.query({
          watch: true,
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds,
        }),
        ac.signal,
      );
      lastData = Date.now();
      limit = inactivityMs;
      connected = true;
      if (res.status !== 200) {
        const text = await res.text().catch(() => '');
        throw kubeErrorOf(res.status, res.statusText, text, this.path, this.rest.clusterName);
      }
      // Connected: whatever failed before works again.
      this.setError(undefined);
      const decoder = new TextDecoder();
      let buf = '';
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        lastData = Date.now();
        buf += decoder.decode(chunk, { stream: true });
        let nl = buf.indexOf('\n');
        while (nl >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          nl = buf.indexOf('\n');
          if (!line) continue;
          // Abandoned for a relist (relistNow): the rest of this chunk must not move resourceVersion.
          if (this.restartRequested) break;
          let ev: { type: string; object: T & { code?: number; reason?: string; message?: string } };
          try {
            ev = JSON.parse(line);
          } catch {
            continue;
          }
          if (ev.type === 'ERROR') {
            const st = ev.object;
            // 410: our resourceVersion is too old (compacted): list again.
            if (st?.code === 410 || st?.reason === 'Expired' || st?.reason === 'Gone') {
              gone = true;
              ac.abort();
              break;
            }
            throw kubeErrorOf(
              st?.code ?? 500,
              st?.reason ?? 'WatchError',
              JSON.stringify(st),
              this.path,
              this.rest.clusterName,
            );
          }
          const rv = ev.object?.metadata?.resourceVersion;
          if (rv) this.resourceVersion = rv;
          if (ev.type === 'BOOKMARK') {
            this.stats.bookmarks++;
            continue;
          }
          events++;
          this.apply(ev.type, ev.object);
        }
        if (gone) break;
      }
      return { end: gone ? 'gone' : 'closed', events };
    } catch (e) {
      if (gone) return { end: 'gone', events };
      if (signal.aborted) return { end: 'stopped', events };
      if (inactive && !connected)
        throw new Error(
          `watch ${this.path}: no answer from cluster "${this.rest.clusterName}" within ${limit / 1000} s`,
        );
      if (inactive) return { end: 'inactive', events };
      if (this.restartRequested) return { end: 'restart', events };
      throw e;
    } finally {
      clearInterval(check);
      signal.removeEventListener('abort', onStop);
      ac.abort();
    }
  }

  private backoff(): number {
    const cap = this.opts.maxBackoffMs ?? 30_000;
    const d = Math.min(cap, 500 * 2 ** Math.min(this.failures, 16));
    // Jitter: 50-100 % of the step, so many informers that failed together do not retry together.
    return d * (0.5 + Math.random() * 0.5);
  }

  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private async loop(gen: number): Promise<void> {
    const ac = new AbortController();
    this.abort = ac;
    const live = () => !this.stopped && gen === this.generation;
    while (live()) {
      try {
        // Again when a relist was requested while listing (relistNow).
        while (!this.resourceVersion && live()) await this.relist(ac.signal);
        if (!live()) break;
        const t0 = Date.now();
        const { end, events } = await this.watchOnce(ac.signal);
        if (end === 'stopped' || !live()) break;
        if (end === 'gone') {
          this.stats.relistsAfterGone++;
          this.log?.debug?.({ path: this.path, cluster: this.rest.clusterName }, 'watch expired (410); relisting');
          this.resourceVersion = '';
          continue;
        }
        if (end === 'inactive')
          this.log?.info?.({ path: this.path, cluster: this.rest.clusterName }, 'watch silent too long; reopening');
        if (end === 'restart') continue;
        if (events > 0 || Date.now() - t0 >= SHORT_WATCH_MS) this.failures = 0;
        else {
          // Closed at once with nothing delivered: back off instead of reconnecting in a tight loop.
          this.failures++;
          await this.sleep(this.backoff(), ac.signal);
        }
      } catch (e) {
        if (!live()) break;
        if (isGone(e)) {
          this.stats.relistsAfterGone++;
          this.resourceVersion = '';
          continue;
        }
        this.failures++;
        const status = e instanceof KubeError ? e.status : undefined;
        this.setError(String(e instanceof Error ? e.message : e), status);
        // An error answer from the apiserver: events may be lost, list again. A dropped connection
        // resumes from our resourceVersion (the apiserver answers 410 if that is too old by then).
        if (status !== undefined) this.resourceVersion = '';
        const delay = this.backoff();
        this.log?.warn(
          { path: this.path, cluster: this.rest.clusterName, err: this.lastError, delay: Math.round(delay) },
          'watch failed; retrying',
        );
        await this.sleep(delay, ac.signal);
      }
    }
  }
}

function kubeErrorOf(status: number, statusText: string, text: string, path: string, cluster: string): KubeError {
  let reason = statusText;
  let message = text.slice(0, 2000);
  try {
    const st = JSON.parse(text) as { reason?: string; message?: string };
    reason = st.reason ?? reason;
    message = st.message ?? message;
  } catch {
    // not a Status object
  }
  return new KubeError(status, reason, 'WATCH', path, cluster, message);
}

/** Opens a watch stream (GET ?watch=true) with the cluster's credentials; the caller reads the body. */
async function openWatch(
  rest: KubeRest,
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  signal: AbortSignal,
) {
  // Informers watch as the controller itself; a watch as another user is not something it does.
  if (rest.impersonating) throw new Error('informers do not watch as an impersonated user');
  const cluster = rest.kc.getCurrentCluster();
  if (!cluster) throw new Error(`kubeconfig for "${rest.clusterName}" has no current cluster`);
  const url = new URL(cluster.server + path);
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
  const ctx = new k8s.RequestContext(url.toString(), k8s.HttpMethod.GET);
  await rest.kc.applySecurityAuthentication(ctx);
  const headers: Record<string, string> = { ...ctx.getHeaders(), accept: 'application/json' };
  return fetch(url, { method: 'GET', headers, dispatcher: ctx.getDispatcher(), signal });
}

// ---- transforms: what the cache keeps of an object ----------------------------------------------

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * A copy without undefined values (a slim object has no keys it does not need). Copied, not
 * `delete`d in place: deleting a property turns a V8 object into a dictionary (a hash table per
 * object), which for the cache's thousands of small objects costs more than the dropped keys save.
 */
export function compact<O extends Record<string, unknown>>(o: O): O {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o)) if (o[k] !== undefined) out[k] = o[k];
  return out as O;
}

/** The object without metadata.managedFields (never read; often the largest part of small objects). */
export function withoutManagedFields<T extends KObject>(obj: T): T {
  const m = obj.metadata as T['metadata'] & { managedFields?: unknown };
  if (!m || m.managedFields === undefined) return obj;
  const { managedFields: _, ...metadata } = m;
  return { ...obj, metadata };
}

type Conditions = Array<{ type: string; status: string; reason?: string; message?: string }> | undefined;
/** Conditions as verdicts read them: type, status, reason, message. */
export const slimConditions = (cs: Conditions) =>
  cs?.map((c) => compact({ type: c.type, status: c.status, reason: c.reason, message: c.message }));

/** The containers of a pod template as verdicts read them: name and image. */
export const slimContainers = (cs: ReadonlyArray<{ name: string; image?: string }> | undefined) =>
  cs?.map((c) => compact({ name: c.name, image: c.image }));

/** The spec fields every workload kind keeps: replicas, pause, selector labels, containers' name and image. */
export const slimPodSpec = (spec: {
  replicas?: number;
  paused?: boolean;
  selector?: { matchLabels?: Record<string, string> };
  template?: { spec?: { containers?: ReadonlyArray<{ name: string; image?: string }> } };
}) => ({
  replicas: spec.replicas,
  paused: spec.paused || undefined,
  selector: spec.selector && compact({ matchLabels: spec.selector.matchLabels }),
  template: spec.template && { spec: compact({ containers: slimContainers(spec.template.spec?.containers) }) },
});

/**
 * The managers owning a container's `image` in managedFields, wherever the kind keeps its pod
 * template (a CronJob nests it deeper). A manager that changes a field with an Update takes it over
 * from the others, so for each container the owner with the latest time is the last writer. Kept
 * instead of managedFields themselves (their size is often most of a small object).
 */
export function imageWriters(managedFields: unknown): ImageWriter[] | undefined {
  if (!Array.isArray(managedFields)) return undefined;
  const out: ImageWriter[] = [];
  const walk = (node: unknown, entry: { manager?: string; operation?: string; time?: string }, depth: number) => {
    if (!node || typeof node !== 'object' || depth > 12) return;
    for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
      if (k === 'f:containers' && v && typeof v === 'object') {
        for (const [ck, cv] of Object.entries(v as Record<string, unknown>)) {
          if (!ck.startsWith('k:') || !cv || typeof cv !== 'object' || !('f:image' in cv)) continue;
          let container: unknown;
          try {
            container = (JSON.parse(ck.slice(2)) as { name?: unknown }).name;
          } catch {
            continue;
          }
          if (typeof container === 'string' && entry.manager)
            out.push(compact({ container, manager: entry.manager, operation: entry.operation, time: entry.time }));
        }
      } else if (k.startsWith('f:')) walk(v, entry, depth + 1);
    }
  };
  for (const e of managedFields as Array<{ manager?: string; operation?: string; time?: string; fieldsV1?: unknown }>)
    walk(e?.fieldsV1, e ?? {}, 0);
  return out.length ? out : undefined;
}

/**
 * Name, namespace, uid, generation, resourceVersion, annotations (without last-applied) and the
 * image writers of managedFields ({@link imageWriters}).
 */
export function slimMetadata(m: Record<string, unknown> & KObject['metadata']) {
  let annotations = m.annotations as Record<string, string> | undefined;
  if (annotations && LAST_APPLIED in annotations) {
    const { [LAST_APPLIED]: _, ...rest } = annotations;
    annotations = Object.keys(rest).length ? rest : undefined;
  }
  return compact({
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    generation: m.generation,
    resourceVersion: m.resourceVersion,
    annotations,
    imageWriters: imageWriters(m.managedFields),
  });
}

/**
 * A Deployment/StatefulSet as far as the controller reads it ({@link Workload}): the containers'
 * name and image, replicas, selector, pause and update strategy (with a StatefulSet's partition), and
 * the status fields rollout verdicts and running versions use. Labels, the rest of the pod template
 * and managedFields are dropped. Other kinds keep their own fields (`slim` of each kind in
 * rollout/kinds/).
 */
export function slimWorkload(obj: Workload): Workload {
  const spec = obj.spec;
  const st = obj.status;
  return compact({
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: slimMetadata(obj.metadata),
    spec:
      spec &&
      compact({
        ...slimPodSpec(spec),
        updateStrategy:
          spec.updateStrategy &&
          compact({
            type: spec.updateStrategy.type,
            // A partition of 0 updates every pod, like none at all.
            rollingUpdate: spec.updateStrategy.rollingUpdate?.partition
              ? { partition: spec.updateStrategy.rollingUpdate.partition }
              : undefined,
          }),
      }),
    status:
      st &&
      compact({
        observedGeneration: st.observedGeneration,
        replicas: st.replicas,
        updatedReplicas: st.updatedReplicas,
        readyReplicas: st.readyReplicas,
        availableReplicas: st.availableReplicas,
        unavailableReplicas: st.unavailableReplicas,
        currentRevision: st.currentRevision,
        updateRevision: st.updateRevision,
        conditions: slimConditions(st.conditions),
      }),
  });
}

/** A HelmRelease: its spec (values are read) and Ready-type conditions; managedFields dropped. */
export function slimHelmRelease(obj: HelmRelease): HelmRelease {
  return compact({
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: slimMetadata(obj.metadata),
    spec: obj.spec,
    status:
      obj.status &&
      compact({ observedGeneration: obj.status.observedGeneration, conditions: slimConditions(obj.status.conditions) }),
  });
}
