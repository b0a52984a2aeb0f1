import { type Condition, type PromotionPlan, type PromotionPlanStatus, setCondition } from '@kpromo/api';
import type { KubeRest } from '../../kube/rest.js';
import { StatusWriter } from '../statusWriter.js';
import { type GroupCommit, groupCommit } from './groupCommit.js';

/**
 * How long a save may wait for other apps' changes to share its write. Apps moving in parallel
 * rarely save at the same instant (copies and rollouts take different times), so without a short
 * wait each app step costs its own status PUT; waiting stops early once every app at work is
 * waiting on a save. Short next to a step's own duration (a copy, a rollout).
 */
export const JOURNAL_LINGER_MS = 250;

/**
 * A plan's status as its journal: the in-memory copy the steps change, and `save()`, which stores it
 * through the status subresource (conflict-safe and fenced: {@link StatusWriter}). Steps save their
 * intent before each side effect and its result right after, so a new leader resumes without redoing
 * finished steps. Apps advancing in parallel share writes (group commit): a save() resolves once a
 * write that started after the caller's change is stored; the write waits up to `lingerMs` for the
 * other apps at work ({@link PlanJournal.working}) to save too, and goes at once when all of them wait.
 */
export class PlanJournal {
  readonly status: PromotionPlanStatus;
  readonly save: GroupCommit;
  private readonly writer: StatusWriter<PromotionPlanStatus, PromotionPlan>;
  private readonly generation: number | undefined;
  /** Apps advancing now (inside {@link working}). */
  private active = 0;

  constructor(
    control: KubeRest,
    plan: PromotionPlan,
    private readonly now: () => Date,
    fence?: () => void,
    lingerMs = JOURNAL_LINGER_MS,
  ) {
    this.generation = plan.metadata.generation;
    this.writer = new StatusWriter<PromotionPlanStatus, PromotionPlan>(control, plan, { fence });
    this.status = structuredClone(plan.status ?? {});
    this.save = groupCommit(
      async () => {
        this.status.observedGeneration = this.generation;
        await this.writer.write(structuredClone(this.status));
      },
      { lingerMs, complete: (blocked) => blocked >= this.active },
    );
  }

  /** Runs one app's advance as a participant: saves wait for it only while it is running. */
  async working<T>(fn: () => Promise<T>): Promise<T> {
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.save.poke();
    }
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
