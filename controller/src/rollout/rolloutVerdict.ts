import type { Workload } from '../kube/cacheView.js';
import { parseImageRef } from '../util/imageRef.js';
import { deploymentKind } from './kinds/deployment.js';
import { builtinWorkloadKinds } from './registry.js';
import type { WorkloadKind, WorkloadReadiness } from './workloadKind.js';

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

export function containerOf(
  w: Workload,
  container?: string,
  containers: ReadonlyArray<{ name: string; image?: string }> = w.spec?.template?.spec?.containers ?? [],
) {
  return container ? containers.find((c) => c.name === container) : containers[0];
}

/** Does the workload's pod template already carry the desired image (digest wins over tag)? */
export function imageMatches(image: string | undefined, desired: { tag?: string; digest?: string }): boolean {
  if (!image) return false;
  const r = parseImageRef(image);
  if (desired.digest) return r.digest === desired.digest;
  return !!desired.tag && r.tag === desired.tag;
}

/** Rollout completion of a Deployment or StatefulSet (by its `kind`; Deployment when unset), as `kubectl rollout status` judges it. */
export function workloadReady(w: Workload): WorkloadReadiness {
  return (builtinWorkloadKinds.get(w.kind ?? '') ?? deploymentKind).ready(w);
}

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
  /** How to judge this kind (containers, readiness); by the workload's own kind when absent. */
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
  const c = containerOf(w, input.container, input.kind?.containers?.(w));
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
  const deadline = w.status?.conditions?.find(
    (x) => x.type === 'Progressing' && x.status === 'False' && x.reason === 'ProgressDeadlineExceeded',
  );
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
  if (r.failed) return { state: 'Failed', reason: r.failed, message: `${w.metadata.name}: ${r.message}` };
  if (r.ready) return { state: 'Ready', reason: 'RolloutComplete', message: `${w.metadata.name}: ${r.message}` };
  return timedOut
    ? timeout(`${w.metadata.name}: ${r.message}`)
    : { state: 'Progressing', reason: 'RollingOut', message: `${w.metadata.name}: ${r.message}` };
}
