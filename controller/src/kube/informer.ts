import * as k8s from '@kubernetes/client-node';
import { isGone, type KubeRest } from './rest.js';

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

export const objectKey = (o: KObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/**
 * List+watch of one collection path with its own store. Watches resume from the last resourceVersion
 * (bookmarks keep it fresh); a 410 Gone relists; any other failure reconnects with capped exponential
 * backoff. On relist, objects that disappeared meanwhile are reported as deletes.
 */
export class Informer<T extends KObject> {
  private readonly store = new Map<string, T>();
  private resourceVersion = '';
  private abort?: AbortController;
  private stopped = false;
  private synced = false;
  private failures = 0;
  private readonly handlers: InformerHandler<T>[] = [];
  private readonly stateHandlers: Array<() => void> = [];
  private syncWaiters: Array<() => void> = [];
  lastError?: string;

  constructor(
    private readonly rest: KubeRest,
    /** Collection path, e.g. /apis/apps/v1/namespaces/shop/deployments. */
    readonly path: string,
    private readonly log?: InformerLog,
    private readonly opts: { maxBackoffMs?: number; labelSelector?: string } = {},
  ) {}

  on(h: InformerHandler<T>): void {
    this.handlers.push(h);
  }

  /** Called when the informer first syncs and whenever `lastError` changes (set or cleared). */
  onState(h: () => void): void {
    this.stateHandlers.push(h);
  }
  private setError(err: string | undefined) {
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
    this.stopped = false;
    void this.loop();
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
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

  private async relist(): Promise<void> {
    const list = await this.rest.request<{ items: T[]; metadata: { resourceVersion: string } }>('GET', this.path, {
      query: { labelSelector: this.opts.labelSelector },
    });
    const seen = new Set<string>();
    for (const item of list.items) {
      const key = objectKey(item);
      seen.add(key);
      const prev = this.store.get(key);
      this.store.set(key, item);
      if (!prev) this.emit('add', item);
      else if (prev.metadata.resourceVersion !== item.metadata.resourceVersion) this.emit('update', item);
    }
    for (const [key, obj] of this.store) {
      if (!seen.has(key)) {
        this.store.delete(key);
        this.emit('delete', obj);
      }
    }
    this.resourceVersion = list.metadata.resourceVersion;
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
      this.emitState();
    }
    this.setError(undefined);
  }

  /** One watch connection; resolves when it ends (server timeout, error, stop). */
  private watchOnce(): Promise<void> {
    return new Promise((resolve, reject) => {
      const w = new k8s.Watch(this.rest.kc);
      let gone = false;
      w.watch(
        this.path,
        {
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: 240 + Math.floor(Math.random() * 60),
          labelSelector: this.opts.labelSelector,
        },
        (type: string, obj: T & { code?: number }) => {
          if (type === 'ERROR') {
            // Status object: 410 means our resourceVersion is too old.
            if (obj.code === 410) gone = true;
            return;
          }
          if (obj?.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
          if (type === 'BOOKMARK') return;
          const key = objectKey(obj);
          if (type === 'DELETED') {
            this.store.delete(key);
            this.emit('delete', obj);
          } else {
            const existed = this.store.has(key);
            this.store.set(key, obj);
            this.emit(existed ? 'update' : 'add', obj);
          }
          this.failures = 0;
        },
        (err: unknown) => {
          if (gone || (err as { statusCode?: number })?.statusCode === 410) {
            this.resourceVersion = '';
            resolve();
          } else if (err && !this.stopped && (err as { name?: string }).name !== 'TimeoutError') reject(err);
          // The client's 30s inactivity timeout on a quiet collection is not a failure: resume from our resourceVersion.
          else resolve();
        },
      ).then((ac) => {
        this.abort = ac;
        if (this.stopped) ac.abort();
      }, reject);
    });
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        if (!this.resourceVersion) await this.relist();
        await this.watchOnce();
        this.setError(undefined);
      } catch (e) {
        if (this.stopped) break;
        if (isGone(e)) {
          this.resourceVersion = '';
          continue;
        }
        this.failures++;
        this.setError(String(e instanceof Error ? e.message : e));
        // Relist after errors too: events may have been missed while disconnected.
        this.resourceVersion = '';
        const delay = Math.min(this.opts.maxBackoffMs ?? 30_000, 250 * 2 ** Math.min(this.failures, 10));
        this.log?.warn(
          { path: this.path, cluster: this.rest.clusterName, err: this.lastError, delay },
          'watch failed; retrying',
        );
        await new Promise((r) => setTimeout(r, delay * (0.8 + Math.random() * 0.4)));
      }
    }
  }
}
