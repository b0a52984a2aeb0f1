import { isDeepStrictEqual } from 'node:util';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import type { RequestPriority } from '../kube/rateLimit.js';
import { isConflict, isNotFound, type KubeRest } from '../kube/rest.js';

/** An object with a status subresource, as far as status writes need it. */
export interface StatusObject<S> {
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string; generation?: number };
  status?: S;
}

export class ObjectGoneError extends Error {}

/** Someone else changed the status since we read it: our in-memory copy is stale; re-read and redo. */
export class StatusConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StatusConflictError';
  }
}

/**
 * Serialised status writes for one object through the status subresource. On 409 it re-reads the
 * object: when only the spec or metadata moved (an approval was appended), it puts its status on
 * the fresh object; when the status itself changed under it (another writer, e.g. a leader that
 * took over), it throws {@link StatusConflictError} instead of overwriting: the reconcile is retried
 * from the fresh journal (derived statuses may opt to overwrite). `fence` runs before every
 * attempt, so a replica that lost leadership writes nothing.
 */
export class StatusWriter<S, T extends StatusObject<S>> {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly rest: KubeRest,
    public obj: T,
    private readonly o: {
      /** Throws when this replica may no longer write (leader fencing). */
      fence?: () => void;
      /**
       * Derived statuses (Application, Environment, Flow) are a pure function of the cache, so the
       * latest computation may overwrite; a plan's status is a journal that must not be.
       */
      overwriteOthers?: boolean;
      /** `low` for derived statuses: under the client rate limit they wait behind promotion steps. */
      priority?: RequestPriority;
    } = {},
  ) {}

  private path(): string {
    const t = KPROMO_TYPES[this.obj.kind as keyof typeof KPROMO_TYPES];
    return resourcePath(t, this.obj.metadata.namespace, this.obj.metadata.name, 'status');
  }

  /** Writes `status` (a full replacement). Calls are applied in order. */
  write(status: S): Promise<T> {
    const run = async (): Promise<T> => {
      for (let attempt = 0; ; attempt++) {
        this.o.fence?.();
        try {
          const updated = await this.rest.put<T>(this.path(), { ...this.obj, status }, { priority: this.o.priority });
          this.obj = updated;
          return updated;
        } catch (e) {
          if (isNotFound(e))
            throw new ObjectGoneError(
              `${this.obj.kind} ${this.obj.metadata.namespace}/${this.obj.metadata.name} was deleted`,
            );
          if (!isConflict(e) || attempt >= 5) throw e;
          const fresh = await this.rest.getOrUndefined<T>(this.path().replace(/\/status$/, ''));
          if (!fresh || fresh.metadata.uid !== this.obj.metadata.uid) {
            throw new ObjectGoneError(
              `${this.obj.kind} ${this.obj.metadata.namespace}/${this.obj.metadata.name} was deleted or recreated`,
            );
          }
          if (!this.o.overwriteOthers && !isDeepStrictEqual(fresh.status ?? {}, this.obj.status ?? {}))
            throw new StatusConflictError(
              `${this.obj.kind} ${this.obj.metadata.namespace}/${this.obj.metadata.name}: status changed by another writer; re-reading`,
            );
          this.obj = fresh;
        }
      }
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }
}

/**
 * Semantic equality of two statuses: key order (the apiserver's differs from ours) and undefined
 * fields (absent on the wire) do not count as a change.
 */
export function sameStatus(a: unknown, b: unknown): boolean {
  const norm = (x: unknown) => JSON.parse(JSON.stringify(x ?? {}));
  return isDeepStrictEqual(norm(a), norm(b));
}
