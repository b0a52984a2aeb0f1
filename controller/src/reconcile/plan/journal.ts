import { type Condition, type PromotionPlan, type PromotionPlanStatus, setCondition } from '@kpromo/api';
import type { KubeRest } from '../../kube/rest.js';
import { StatusWriter } from '../statusWriter.js';

/**
 * Coalesces calls of `flush`: a call made while a flush runs joins the single next flush, which
 * starts when the running one ends (and sees every change made until then). Each caller's promise
 * settles with the flush it joined.
 */
export function groupCommit(flush: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  return () => {
    if (next) return next;
    const before = running;
    let p!: Promise<void>; // assigned once, read inside the closure that creates it
    p = (async () => {
      await before?.catch(() => undefined); // always yields, so `p` is assigned below first
      if (next === p) next = undefined;
      running = p;
      try {
        await flush();
      } finally {
        if (running === p) running = undefined;
      }
    })();
    next = p;
    return p;
  };
}

/**
 * A plan's status as its journal: the in-memory copy the steps change, and `save()`, which stores it
 * through the status subresource (conflict-safe and fenced: {@link StatusWriter}). Steps save their
 * intent before each side effect and its result right after, so a new leader resumes without redoing
 * finished steps. Apps advancing in parallel share writes (group commit): a save() resolves once a
 * write that started after the caller's change is stored, so N apps saving at once cost ~2 writes.
 */
export class PlanJournal {
  readonly status: PromotionPlanStatus;
  readonly save: () => Promise<void>;
  private readonly writer: StatusWriter<PromotionPlanStatus, PromotionPlan>;
  private readonly generation: number | undefined;

  constructor(
    control: KubeRest,
    plan: PromotionPlan,
    private readonly now: () => Date,
    fence?: () => void,
  ) {
    this.generation = plan.metadata.generation;
    this.writer = new StatusWriter<PromotionPlanStatus, PromotionPlan>(control, plan, { fence });
    this.status = structuredClone(plan.status ?? {});
    this.save = groupCommit(async () => {
      this.status.observedGeneration = this.generation;
      await this.writer.write(structuredClone(this.status));
    });
  }

  /** The plan as last stored (what Events refer to). */
  get stored(): PromotionPlan {
    return this.writer.obj;
  }

  /** Sets a condition for the plan's generation (stored with the next save). */
  cond(type: string, status: Condition['status'], reason: string, message: string): void {
    this.status.conditions = setCondition(
      this.status.conditions,
      { type, status, reason, message },
      this.generation,
      this.now(),
    );
  }
}
