import type { KubeObject, WorkloadReadiness } from '../../extension/workloadKind.js';
import { compact, slimContainers, slimMetadata } from '../../kube/informer.js';
import { CRONJOB, JOB, resourcePath } from '../../kube/paths.js';
import { defineWatchedKind } from '../builtinKind.js';
import { imageMatches } from '../imageMatch.js';
import { type Job, jobReady } from './job.js';

/** A batch/v1 CronJob as far as its verdict reads it. */
export interface CronJob extends KubeObject {
  spec?: {
    schedule?: string;
    suspend?: boolean;
    jobTemplate?: { spec?: { template?: { spec?: { containers?: Array<{ name: string; image?: string }> } } } };
  };
  status?: { lastScheduleTime?: string; lastSuccessfulTime?: string; active?: Array<{ name?: string }> };
}

export const CRONJOB_POD_TEMPLATE = ['spec', 'jobTemplate', 'spec', 'template'] as const;

/**
 * A CronJob is rolled out once its job template runs the promoted image (checked for every kind
 * before this): each Job it creates from then on uses it. Nothing runs at that moment, so there is
 * no more to wait for, unless the Application's workload sets `waitForNextRun` (see
 * {@link nextRunReadiness}).
 */
export function cronJobReady(c: CronJob): WorkloadReadiness {
  const schedule = c.spec?.schedule ? ` (schedule "${c.spec.schedule}")` : '';
  return {
    ready: true,
    message: c.spec?.suspend
      ? `job template updated; the CronJob is suspended, so no Job runs it yet${schedule}`
      : `job template updated; its next Job runs it${schedule}`,
  };
}

/** The container a Job runs: the named one, else the first. */
const jobImage = (j: Job, container?: string) => {
  const cs = j.spec?.template?.spec?.containers ?? [];
  return (container ? cs.find((x) => x.name === container) : cs[0])?.image;
};

/**
 * With `waitForNextRun`: the newest Job this CronJob created from the promoted image decides:
 * completed → Succeeded, failed (past its backoffLimit, its deadline) → Failed with the Job's
 * reason; none yet → waiting for the next scheduled run (the flow's rollout timeout must cover the
 * schedule's interval). Jobs are matched by owner (the CronJob's uid, else its name).
 */
export function nextRunReadiness(
  c: CronJob,
  jobs: readonly Job[],
  desired: { tag?: string; digest?: string },
  container?: string,
): WorkloadReadiness {
  const mine = jobs
    .filter((j) =>
      j.metadata.ownerReferences?.some(
        (o) =>
          o.kind === 'CronJob' && (c.metadata.uid && o.uid ? o.uid === c.metadata.uid : o.name === c.metadata.name),
      ),
    )
    .filter((j) => imageMatches(jobImage(j, container), desired))
    .sort((a, b) => (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? ''));
  const run = mine[0];
  if (!run) {
    const last = c.status?.lastScheduleTime ? `last scheduled at ${c.status.lastScheduleTime}` : 'never scheduled yet';
    return {
      ready: false,
      message: `waiting for the next scheduled run with the promoted image (schedule "${c.spec?.schedule ?? '?'}"; ${last}${c.spec?.suspend ? '; the CronJob is suspended' : ''})`,
    };
  }
  const r = jobReady(run);
  return { ...r, message: `run ${run.metadata.name}: ${r.message}` };
}

export const cronJobKind = defineWatchedKind<CronJob>({
  kind: 'CronJob',
  resource: CRONJOB,
  podTemplate: CRONJOB_POD_TEMPLATE,
  patch: 'strategic',
  ready: cronJobReady,
  async confirm({ obj, ref, desired, namespace, client }) {
    if (!ref.waitForNextRun) return undefined;
    const rest = await client();
    const jobs = await rest.get<{ items: Job[] }>(resourcePath(JOB, namespace));
    return nextRunReadiness(obj, jobs.items, desired, ref.container);
  },
  slim: (c) =>
    compact({
      apiVersion: c.apiVersion,
      kind: c.kind,
      metadata: slimMetadata(c.metadata),
      spec:
        c.spec &&
        compact({
          schedule: c.spec.schedule,
          suspend: c.spec.suspend || undefined,
          jobTemplate: c.spec.jobTemplate && {
            spec: {
              template: {
                spec: compact({ containers: slimContainers(c.spec.jobTemplate.spec?.template?.spec?.containers) }),
              },
            },
          },
        }),
      status:
        c.status &&
        compact({
          lastScheduleTime: c.status.lastScheduleTime,
          lastSuccessfulTime: c.status.lastSuccessfulTime,
          active: c.status.active?.map((a) => compact({ name: a.name })),
        }),
    }),
});
