import * as k8s from '@kubernetes/client-node';
import { interner } from './intern.js';
import type { Logger } from './log.js';
import { apiPath, kindString, type ResourceKind } from './resourceKind.js';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
  [k: string]: unknown;
}

export type WatchEvent =
  /** One page of a (re)list: every object in it, as it is now. */
  | { type: 'page'; objects: KubeObject[] }
  /** A (re)list is complete: every page was handed over, and a delete for each object it no longer has. */
  | { type: 'synced' }
  | { type: 'upsert'; object: KubeObject }
  | { type: 'delete'; object: KubeObject };

export interface WatchOptions {
  kc: k8s.KubeConfig;
  kind: ResourceKind;
  log: Logger;
  onEvent: (e: WatchEvent) => void | Promise<void>;
  pageSize?: number;
}

/** `namespace/name` (or the name of a cluster-scoped object), one flat string (see exporter.ts's keys). */
export const objectKey = (o: KubeObject) =>
  o.metadata.namespace ? [o.metadata.namespace, o.metadata.name].join('/') : o.metadata.name;

/** Why an object cannot be processed, or undefined when it has the minimum shape. */
export function malformedReason(o: unknown): string | undefined {
  if (!o || typeof o !== 'object') return 'not an object';
  const m = (o as { metadata?: unknown }).metadata;
  if (!m || typeof m !== 'object') return 'missing metadata';
  if (typeof (m as { name?: unknown }).name !== 'string' || !(m as { name: string }).name)
    return 'missing metadata.name';
  return undefined;
}

/** Keys known before a relist that the relisted set lacks: deletes missed while not watching. */
export function missingAfterRelist(known: Iterable<string>, relisted: ReadonlySet<string>): string[] {
  return [...known].filter((k) => !relisted.has(k));
}

/**
 * What is kept per known object: enough to report its delete later, not the whole object. Every
 * object of a watcher carries the same apiVersion and kind; `same` hands back one instance of each
 * instead of a copy per object (parsed JSON has its own strings).
 */
function slim(o: KubeObject, same: ReturnType<typeof interner>): KubeObject {
  const { name, namespace, uid, resourceVersion } = o.metadata;
  return {
    apiVersion: same(o.apiVersion),
    kind: same(o.kind),
    metadata: { name, namespace: same(namespace), uid, resourceVersion },
  };
}

/** managedFields are large and never mapped; dropping them halves what flows through jq. */
function trim(o: KubeObject): KubeObject {
  const m = o.metadata as KubeObject['metadata'] & { managedFields?: unknown };
  if (m.managedFields) delete m.managedFields;
  return o;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * List-then-watch for one resource in one cluster. After every (re)list it emits `synced` with the
 * full set and a `delete` for each known object that disappeared, so a 410 Gone, a dropped watch
 * or an apiserver restart never loses deletes. A missing CRD (404) is retried until it reappears.
 */
export class ResourceWatcher {
  private readonly known = new Map<string, KubeObject>();
  private readonly same = interner();
  private stopped = false;
  private req?: { abort(): void };
  private readonly path: string;
  private listed = false;
  relists = 0;
  /** 410 Gone answers seen (resourceVersion too old): each one forces a relist. */
  gone = 0;

  constructor(private readonly o: WatchOptions) {
    this.path = apiPath(o.kind);
  }

  get hasSynced(): boolean {
    return this.listed;
  }

  start(): void {
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.gate?.release();
    this.req?.abort();
  }

  private gate?: { promise: Promise<string | undefined>; release: (resumeFrom?: string) => void };

  /**
   * Stops watching until the returned function is called, then relists. Models a long watch
   * outage (events missed, resourceVersion too old) for tests and maintenance windows. Passing a
   * resourceVersion resumes the watch from it instead (a too-old one makes the apiserver answer 410).
   */
  pause(): (resumeFrom?: string) => void {
    let release!: (rv?: string) => void;
    const promise = new Promise<string | undefined>((r) => {
      release = r;
    });
    this.gate = {
      promise,
      release: (rv?: string) => {
        this.gate = undefined;
        release(rv);
      },
    };
    this.req?.abort();
    return this.gate.release;
  }

  /**
   * Lists every object, handing each page over as it arrives: at tens of thousands of objects,
   * holding the whole list before mapping any of it was most of the exporter's peak memory.
   * Returns the keys seen and the list's resourceVersion.
   */
  private async list(): Promise<{ keys: Set<string>; resourceVersion: string }> {
    const api = this.o.kc.makeApiClient(k8s.CustomObjectsApi);
    const keys = new Set<string>();
    let cont: string | undefined;
    let rv = '';
    const { group, version, plural } = this.o.kind;
    // Core resources (`v1/namespaces`) live under /api, not /apis/<group>: the generic list call is
    // pointed there by rewriting its path.
    const rewrite: k8s.ObservableMiddleware = {
      pre: (ctx) => {
        ctx.setUrl(ctx.getUrl().replace(`/apis//${version}/`, `/api/${version}/`));
        return new k8s.Observable(Promise.resolve(ctx));
      },
      post: (rsp) => new k8s.Observable(Promise.resolve(rsp)),
    };
    const core: k8s.ConfigurationOptions | undefined = group
      ? undefined
      : { middlewareMergeStrategy: 'append', middleware: [rewrite] };
    do {
      const page = (await api.listClusterCustomObject(
        {
          group: group || '',
          version,
          plural,
          limit: this.o.pageSize ?? 500,
          _continue: cont,
        },
        core,
      )) as {
        items: unknown[];
        metadata?: { continue?: string; resourceVersion?: string };
      };
      const objects: KubeObject[] = [];
      for (const it of page.items) {
        const why = malformedReason(it);
        if (why) this.o.log.warn({ kind: kindString(this.o.kind), reason: why }, 'skipping malformed object');
        else objects.push(trim(it as KubeObject));
      }
      cont = page.metadata?.continue || undefined;
      rv = page.metadata?.resourceVersion ?? rv;
      for (const o of objects) {
        const k = objectKey(o);
        keys.add(k);
        this.known.set(k, slim(o, this.same));
      }
      if (objects.length) await this.o.onEvent({ type: 'page', objects });
    } while (cont);
    return { keys, resourceVersion: rv };
  }

  private async run(): Promise<void> {
    let backoff = 500;
    while (!this.stopped) {
      let rv: string;
      try {
        const { keys, resourceVersion } = await this.list();
        this.relists++;
        for (const k of missingAfterRelist(this.known.keys(), keys)) {
          const gone = this.known.get(k)!;
          this.known.delete(k);
          await this.o.onEvent({ type: 'delete', object: gone });
        }
        this.listed = true;
        await this.o.onEvent({ type: 'synced' });
        rv = resourceVersion;
        backoff = 500;
      } catch (e) {
        const code = (e as { code?: number }).code;
        if (code === 404 && this.known.size > 0) {
          // The CRD was removed: its objects are gone too. Report the deletes, then keep polling.
          for (const gone of [...this.known.values()]) await this.o.onEvent({ type: 'delete', object: gone });
          this.known.clear();
          await this.o.onEvent({ type: 'synced' });
        }
        this.o.log.warn(
          { kind: kindString(this.o.kind), code, err: (e as Error).message?.slice(0, 300) },
          'list failed, retrying',
        );
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 15_000);
        continue;
      }
      // Watch from the list's resourceVersion until it ends; a 410 or error falls back to a relist.
      let expired = false;
      while (!this.stopped && !expired) {
        const result = await this.watchOnce(rv);
        if (result.kind === 'expired' || result.kind === 'error') expired = true;
        else rv = result.rv;
        if (result.kind === 'error') await sleep(backoff);
        if (this.gate) {
          // Paused: whatever happened meanwhile is recovered by the relist diff below.
          const resumeFrom = await this.gate.promise;
          if (resumeFrom) {
            rv = resumeFrom;
            expired = false;
          } else expired = true;
        }
      }
    }
  }

  private watchOnce(rv: string): Promise<{ kind: 'ended'; rv: string } | { kind: 'expired' } | { kind: 'error' }> {
    return new Promise((resolve) => {
      let last = rv;
      let outcome: 'ended' | 'expired' | 'error' = 'ended';
      let chain = Promise.resolve();
      const watch = new k8s.Watch(this.o.kc);
      watch
        .watch(
          this.path,
          { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 300 },
          (type: string, obj: unknown) => {
            if (type === 'ERROR') {
              const code = (obj as { code?: number }).code;
              outcome = code === 410 ? 'expired' : 'error';
              if (code === 410) this.gone++;
              this.o.log.info({ kind: kindString(this.o.kind), code }, 'watch error event, relisting');
              this.req?.abort();
              return;
            }
            const why = malformedReason(obj);
            if (why) {
              this.o.log.warn({ kind: kindString(this.o.kind), reason: why, type }, 'skipping malformed object');
              return;
            }
            const o = trim(obj as KubeObject);
            if (o.metadata.resourceVersion) last = o.metadata.resourceVersion;
            if (type === 'BOOKMARK') return;
            const k = objectKey(o);
            if (type === 'DELETED') this.known.delete(k);
            else this.known.set(k, slim(o, this.same));
            const ev: WatchEvent = type === 'DELETED' ? { type: 'delete', object: o } : { type: 'upsert', object: o };
            chain = chain
              .then(() => this.o.onEvent(ev))
              .catch((e) => this.o.log.error({ err: e }, 'event handler failed'));
          },
          (err: unknown) => {
            // An abort from pause()/stop() is not a failure.
            if (err && outcome === 'ended' && !this.stopped && !this.gate) {
              const code =
                (err as { statusCode?: number; code?: number }).statusCode ?? (err as { code?: number }).code;
              outcome = code === 410 ? 'expired' : 'error';
              if (code === 410) this.gone++;
              this.o.log.info({ kind: kindString(this.o.kind), err: String(err).slice(0, 200) }, 'watch dropped');
            }
            void chain.then(() => resolve(outcome === 'ended' ? { kind: 'ended', rv: last } : { kind: outcome }));
          },
        )
        .then((req) => {
          this.req = req;
          if (this.stopped) req.abort();
        })
        .catch((e) => {
          this.o.log.info({ kind: kindString(this.o.kind), err: String(e).slice(0, 200) }, 'watch failed to start');
          resolve({ kind: 'error' });
        });
    });
  }
}
