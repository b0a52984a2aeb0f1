import type { WorkloadKind, WorkloadReadiness } from '../extension/workloadKind.js';
import type { Workload } from '../kube/cacheView.js';
import { containersOf } from './builtinKind.js';
import { imageMatches } from './imageMatch.js';
import { deploymentKind } from './kinds/deployment.js';
import { builtinWorkloadKinds } from './registry.js';

export { imageMatches };

export type RolloutState = 'Ready' | 'Progressing' | 'Failed';
export interface RolloutVerdict {
  state: RolloutState;
  reason: string;
  message: string;
}

/** Minimal pod shape for crash signals. */
export interface PodSignal {
  metadata: { name: string };
  status?: {
    containerStatuses?: Array<{
      name: string;
      restartCount?: number;
      state?: { waiting?: { reason?: string; message?: string }; terminated?: { reason?: string; exitCode?: number } };
    }>;
  };
}

const CRASH_REASONS = new Set([
  'CrashLoopBackOff',
  'ImagePullBackOff',
  'ErrImagePull',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
]);
export const CRASH_RESTART_THRESHOLD = 3;

/**
 * The named container (else the first) of a workload's pod template: `containers` when given, else
 * where the workload's kind keeps its pod template (a CronJob's job template; by `w.kind`).
 */
export function containerOf(
  w: Workload,
  container?: string,
  containers: ReadonlyArray<{ name: string; image?: string }> = containersOf(builtinWorkloadKinds.get(w.kind ?? ''), w),
) {
  return container ? containers.find((c) => c.name === container) : containers[0];
}

/** Rollout completion of a built-in workload by its `kind` (Deployment when unset or unknown), as its kind module judges it. */
export function workloadReady(w: Workload): WorkloadReadiness {
  return (builtinWorkloadKinds.get(w.kind ?? '') ?? deploymentKind).ready(w);
}

/** A verdict for a paused workload: waiting, never timed out, shown as `Paused: …`. */
export const PAUSED = 'Paused';

/**
 * Pure verdict for one workload rollout towards `desired`.
 * Failed on: progress deadline exceeded, crash signals in pods, or the flow's timeout elapsed.
 */
export function rolloutVerdict(input: {
  workload: Workload | undefined;
  workloadName: string;
  container?: string;
  desired: { tag?: string; digest?: string };
  startedAt: Date;
  now: Date;
  timeoutSeconds: number;
  pods?: PodSignal[];
  /** How to judge this kind (pod template, readiness); by the workload's own kind when absent. */
  kind?: WorkloadKind;
}): RolloutVerdict {
  const { workload: w } = input;
  const elapsed = (input.now.getTime() - input.startedAt.getTime()) / 1000;
  const timedOut = elapsed >= input.timeoutSeconds;
  const timeout = (msg: string): RolloutVerdict => ({
    state: 'Failed',
    reason: 'RolloutTimeout',
    message: `not ready after ${input.timeoutSeconds}s: ${msg}`,
  });
  if (!w) {
    const msg = `workload ${input.workloadName} not found`;
    return timedOut ? timeout(msg) : { state: 'Progressing', reason: 'WorkloadMissing', message: msg };
  }
  const c = containerOf(w, input.container, input.kind ? containersOf(input.kind, w) : undefined);
  if (!c) {
    return {
      state: 'Failed',
      reason: 'ContainerNotFound',
      message: `${w.kind ?? 'workload'} ${w.metadata.name} has no container ${input.container ?? '(first)'}`,
    };
  }
  if (!imageMatches(c.image, input.desired)) {
    const msg = `${w.metadata.name} still runs ${c.image ?? '(none)'}; waiting for the delivery to apply the new image`;
    return timedOut ? timeout(msg) : { state: 'Progressing', reason: 'AwaitingImage', message: msg };
  }
  // A condition from before the controller saw the new spec (a previous rollout's) says nothing yet.
  const observed = Number(w.status?.observedGeneration ?? Number.POSITIVE_INFINITY);
  const deadline = !(observed < (w.metadata.generation ?? 0))
    ? w.status?.conditions?.find(
        (x) => x.type === 'Progressing' && x.status === 'False' && x.reason === 'ProgressDeadlineExceeded',
      )
    : undefined;
  if (deadline) {
    return {
      state: 'Failed',
      reason: 'ProgressDeadlineExceeded',
      message: deadline.message ?? `${w.metadata.name} exceeded its progress deadline`,
    };
  }
  for (const p of input.pods ?? []) {
    for (const cs of p.status?.containerStatuses ?? []) {
      const waiting = cs.state?.waiting?.reason;
      if (waiting && CRASH_REASONS.has(waiting)) {
        return {
          state: 'Failed',
          reason: waiting,
          message: `pod ${p.metadata.name} container ${cs.name}: ${cs.state?.waiting?.message ?? waiting}`,
        };
      }
      if ((cs.restartCount ?? 0) >= CRASH_RESTART_THRESHOLD) {
        return {
          state: 'Failed',
          reason: 'CrashLooping',
          message: `pod ${p.metadata.name} container ${cs.name} restarted ${cs.restartCount} times`,
        };
      }
    }
  }
  const r = input.kind ? input.kind.ready(w) : workloadReady(w);
  return readinessVerdict(input, w.metadata.name, r);
}

/**
 * The verdict for what a kind said about a workload (`ready`, or its `confirm`): failed at once,
 * ready, paused (waiting without a deadline), or waiting until the rollout timeout, which counts from
 * the later of the app's start and the kind's `progressingSince` (e.g. when a paused Rollout was promoted).
 */
export function readinessVerdict(
  input: { startedAt: Date; now: Date; timeoutSeconds: number },
  name: string,
  r: WorkloadReadiness,
): RolloutVerdict {
  if (r.failed) return { state: 'Failed', reason: r.failed, message: `${name}: ${r.message}` };
  if (r.ready) return { state: 'Ready', reason: 'RolloutComplete', message: `${name}: ${r.message}` };
  if (r.paused) return { state: 'Progressing', reason: PAUSED, message: `${PAUSED}: ${name}: ${r.message}` };
  const since = r.progressingSince ? Date.parse(r.progressingSince) : Number.NaN;
  const start = Number.isNaN(since) ? input.startedAt.getTime() : Math.max(input.startedAt.getTime(), since);
  const timedOut = (input.now.getTime() - start) / 1000 >= input.timeoutSeconds;
  return timedOut
    ? {
        state: 'Failed',
        reason: 'RolloutTimeout',
        message: `not ready after ${input.timeoutSeconds}s: ${name}: ${r.message}`,
      }
    : { state: 'Progressing', reason: 'RollingOut', message: `${name}: ${r.message}` };
}
