import type { KubeObject, WorkloadReadiness } from '../../extension/workloadKind.js';
import { compact, slimConditions, slimContainers, slimMetadata } from '../../kube/informer.js';
import { JOB } from '../../kube/paths.js';
import { defineWatchedKind } from '../builtinKind.js';

type Condition = { type: string; status: string; reason?: string; message?: string };

/** A batch/v1 Job as far as its verdict reads it. */
export interface Job extends KubeObject {
  metadata: KubeObject['metadata'] & {
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ kind: string; name: string; uid?: string }>;
    creationTimestamp?: string;
  };
  spec?: {
    completions?: number;
    parallelism?: number;
    backoffLimit?: number;
    suspend?: boolean;
    selector?: { matchLabels?: Record<string, string> };
    template?: { spec?: { containers?: Array<{ name: string; image?: string }> } };
  };
  status?: {
    active?: number;
    succeeded?: number;
    failed?: number;
    startTime?: string;
    completionTime?: string;
    conditions?: Condition[];
  };
}

const condition = (j: Job, type: string) => j.status?.conditions?.find((c) => c.type === type && c.status === 'True');

/**
 * Job completion from its conditions, as the Job controller writes them (and Argo CD reads them):
 * - `Complete`: Succeeded;
 * - `Failed` (or `FailureTarget`, written first while the last pods terminate): Failed with the
 *   condition's reason, e.g. `BackoffLimitExceeded` (more failed pods than `backoffLimit`),
 *   `DeadlineExceeded` (`activeDeadlineSeconds`) or `PodFailurePolicy`;
 * - `Suspended` (`spec.suspend`, e.g. a queue holding it): Paused, waiting to be resumed;
 * - otherwise waiting, with the pod counts.
 * A Job's pod template is immutable, so the promoted image runs in a new Job: `delivery.method:
 * patch` deletes and creates it again; git and HelmRelease deliveries do the same through their agent.
 */
export function jobReady(j: Job): WorkloadReadiness {
  const st = j.status ?? {};
  const counts = `${st.active ?? 0} active, ${st.succeeded ?? 0} succeeded, ${st.failed ?? 0} failed`;
  const failed = condition(j, 'Failed') ?? condition(j, 'FailureTarget');
  if (failed)
    return {
      ready: false,
      failed: failed.reason ?? 'JobFailed',
      message: `Job failed (${failed.reason ?? 'Failed'}): ${failed.message ?? counts}`,
    };
  if (condition(j, 'Complete')) return { ready: true, message: `Job completed (${st.succeeded ?? 0} succeeded)` };
  if (condition(j, 'Suspended') || j.spec?.suspend)
    return { ready: false, paused: true, message: `Job is suspended (spec.suspend); ${counts}` };
  return {
    ready: false,
    message: `Job running: ${counts}${j.spec?.backoffLimit !== undefined ? ` (backoffLimit ${j.spec.backoffLimit})` : ''}`,
  };
}

/** What the cache keeps of a Job (also the Jobs a CronJob creates). */
export const slimJob = (j: Job): Job =>
  compact({
    apiVersion: j.apiVersion,
    kind: j.kind,
    metadata: compact({
      ...slimMetadata(j.metadata),
      ownerReferences: j.metadata.ownerReferences?.map((o) => compact({ kind: o.kind, name: o.name, uid: o.uid })),
      creationTimestamp: j.metadata.creationTimestamp,
    }),
    spec:
      j.spec &&
      compact({
        completions: j.spec.completions,
        parallelism: j.spec.parallelism,
        backoffLimit: j.spec.backoffLimit,
        suspend: j.spec.suspend || undefined,
        selector: j.spec.selector && compact({ matchLabels: j.spec.selector.matchLabels }),
        template: j.spec.template && {
          spec: compact({ containers: slimContainers(j.spec.template.spec?.containers) }),
        },
      }),
    status:
      j.status &&
      compact({
        active: j.status.active,
        succeeded: j.status.succeeded,
        failed: j.status.failed,
        startTime: j.status.startTime,
        completionTime: j.status.completionTime,
        conditions: slimConditions(j.status.conditions),
      }),
  });

export const jobKind = defineWatchedKind<Job>({
  kind: 'Job',
  resource: JOB,
  // The pod template of a Job cannot be changed: a new Job with the same name replaces it.
  patch: 'recreate',
  ready: jobReady,
  slim: slimJob,
});
