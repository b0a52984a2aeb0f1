import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { isConflict, isNotFound, type KubeRest } from '../kube/rest.js';

interface Obj<S> {
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string; generation?: number };
  status?: S;
}

export class ObjectGoneError extends Error {}

/**
 * Serialised status writes for one object through the status subresource. The controller owns
 * status, so on 409 it re-reads the object (fresh resourceVersion; same uid or it was recreated)
 * and puts its status again.
 */
export class StatusWriter<S, T extends Obj<S>> {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly rest: KubeRest,
    public obj: T,
  ) {}

  private path(): string {
    const t = KPROMO_TYPES[this.obj.kind as keyof typeof KPROMO_TYPES];
    return resourcePath(t, this.obj.metadata.namespace, this.obj.metadata.name, 'status');
  }

  /** Writes `status` (a full replacement). Calls are applied in order. */
  write(status: S): Promise<T> {
    const run = async (): Promise<T> => {
      for (let attempt = 0; ; attempt++) {
        try {
          const updated = await this.rest.put<T>(this.path(), { ...this.obj, status });
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
 * Level-triggered status write for objects whose status is derived from the cache: writes `next`
 * only when it differs from the status the object has, so repeated reconciles do not churn it.
 */
export async function writeStatusIfChanged<S, T extends Obj<S>>(rest: KubeRest, obj: T, next: S): Promise<boolean> {
  if (JSON.stringify(next ?? {}) === JSON.stringify(obj.status ?? {})) return false;
  await new StatusWriter<S, T>(rest, obj).write(next);
  return true;
}
