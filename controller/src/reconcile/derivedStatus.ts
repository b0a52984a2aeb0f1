import type { CacheView } from '../kube/cacheView.js';
import type { KubeRest } from '../kube/rest.js';
import { type StatusObject, StatusWriter, sameStatus } from './statusWriter.js';

/** The three parts of a derived-status reconcile. */
export interface DeriveAndWrite<S, T extends StatusObject<S>> {
  /** The object as the cache has it; undefined when it is gone. */
  read(): T | undefined;
  /** Pure: its desired status; undefined when nothing should be written now (e.g. caches still syncing). */
  derive(obj: T): S | undefined;
  write(obj: T, next: S): Promise<unknown>;
}

/**
 * Level-triggered write of a status derived from the cache: writes only when the derived status
 * differs semantically ({@link sameStatus}: key order and undefined fields do not count) from the
 * one the object has, so repeated reconciles do not churn it. True when it wrote.
 */
export async function deriveAndWrite<S, T extends StatusObject<S>>(step: DeriveAndWrite<S, T>): Promise<boolean> {
  const obj = step.read();
  if (!obj) return false;
  const next = step.derive(obj);
  if (next === undefined || sameStatus(next, obj.status)) return false;
  await step.write(obj, next);
  return true;
}

/** What a derived status's `derive` may look at. */
export interface DeriveContext {
  cache: CacheView;
  /** The namespace being reconciled (the object's). */
  namespace: string;
  now: Date;
}

/** Reconciles one object's derived status; true when it wrote. */
export type DerivedStatusReconciler = (
  cache: CacheView,
  control: KubeRest,
  namespace: string,
  name: string,
  now?: Date,
) => Promise<boolean>;

/**
 * A reconciler for a status that is a pure function of the cache (Application, Environment,
 * PromotionFlow): each kind gives only how to read the object and how to derive its status. The
 * latest derivation may overwrite another writer's (StatusWriter `overwriteOthers`), unlike a plan's journal.
 */
export function derivedStatus<S, T extends StatusObject<S>>(kind: {
  read(cache: CacheView, namespace: string, name: string): T | undefined;
  derive(obj: T, ctx: DeriveContext): S | undefined;
}): DerivedStatusReconciler {
  return (cache, control, namespace, name, now = new Date()) =>
    deriveAndWrite<S, T>({
      read: () => kind.read(cache, namespace, name),
      derive: (obj) => kind.derive(obj, { cache, namespace, now }),
      write: (obj, next) =>
        new StatusWriter<S, T>(control, obj, { overwriteOthers: true, priority: 'low' }).write(next),
    });
}
