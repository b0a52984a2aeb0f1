import { createHash } from 'node:crypto';
import type { JobCheck, VerificationCheck } from '@kpromo/api';
import type { CheckProvider, CheckVars, CheckWindow, Measurement } from '../../extension/checkProvider.js';
import { JOB, POD, resourcePath } from '../../kube/paths.js';
import { isConflict, type KubeRest } from '../../kube/rest.js';
import { renderTemplate } from '../placeholders.js';

/** Log lines and characters of a Job's pod kept in the check's status (status stays small). */
export const LOG_TAIL_LINES = 20;
export const LOG_TAIL_CHARS = 2048;
/** A finished Job is deleted by Kubernetes this long after (the verdict is in the plan's status by then). */
const TTL_AFTER_FINISHED_S = 86_400;
/** The label Kubernetes puts on a Job's pods. */
const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';

/** The fields a job check may set; anything else (volumes, securityContext, serviceAccountName, …) is refused. */
const FIELDS: Record<string, true> = {
  image: true,
  command: true,
  args: true,
  env: true,
  endpoint: true,
  resources: true,
};
const ENV_FIELDS: Record<string, true> = { name: true, value: true };
const RESOURCE_FIELDS: Record<string, true> = { requests: true, limits: true };
const AMOUNT_FIELDS: Record<string, true> = { cpu: true, memory: true };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
const unknownKeys = (o: Record<string, unknown>, allowed: Record<string, true>, at: string) =>
  Object.keys(o)
    .filter((k) => !allowed[k])
    .map((k) => `${at}.${k} is not allowed (a job check sets only ${Object.keys(allowed).join(', ')})`);

/**
 * Pure: what is wrong with a job check's template, each naming the field. The CRD schema prunes
 * unknown fields already; this holds where it does not (an older or relaxed CRD, a plugin's copy):
 * the Job runs with the team's rights in the target namespace, so only image, command, args, plain
 * env, endpoint and resources pass, and the KPROMO_ variables stay kpromo's.
 */
export function jobCheckProblems(job: unknown, at = 'job'): string[] {
  if (!isObject(job)) return [`${at} must be an object with an image`];
  const out = unknownKeys(job, FIELDS, at);
  if (typeof job.image !== 'string' || !job.image.trim() || /\s/.test(job.image))
    out.push(`${at}.image must be an image reference without spaces`);
  for (const f of ['command', 'args'] as const)
    if (job[f] !== undefined && !strings(job[f])) out.push(`${at}.${f} must be a list of strings`);
  if (job.endpoint !== undefined && typeof job.endpoint !== 'string') out.push(`${at}.endpoint must be a string`);
  if (job.env !== undefined && !Array.isArray(job.env)) out.push(`${at}.env must be a list of {name, value}`);
  for (const [i, e] of (Array.isArray(job.env) ? job.env : []).entries()) {
    const where = `${at}.env[${i}]`;
    if (!isObject(e)) {
      out.push(`${where} must be {name, value}`);
      continue;
    }
    out.push(...unknownKeys(e, ENV_FIELDS, where).map((p) => `${p}; values come from the check, never from Secrets`));
    if (typeof e.name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(e.name))
      out.push(`${where}.name must be a variable name`);
    else if (e.name.startsWith('KPROMO_')) out.push(`${where}.name ${e.name}: KPROMO_ variables are set by kpromo`);
    if (typeof e.value !== 'string') out.push(`${where}.value must be a string`);
  }
  if (job.resources !== undefined) {
    if (!isObject(job.resources)) out.push(`${at}.resources must be {requests, limits}`);
    else {
      out.push(...unknownKeys(job.resources, RESOURCE_FIELDS, `${at}.resources`));
      for (const k of ['requests', 'limits'] as const) {
        const r = job.resources[k];
        if (r === undefined) continue;
        if (!isObject(r)) out.push(`${at}.resources.${k} must be {cpu, memory}`);
        else out.push(...unknownKeys(r, AMOUNT_FIELDS, `${at}.resources.${k}`));
      }
    }
  }
  return out;
}

/**
 * Pure: the Job's name, the same on every reconcile and every leader for one app's check in one
 * window (the window's start is in the plan's status before the first measurement), and a new
 * one for the next window or plan. A DNS label: the check's name, shortened, and a hash.
 */
export function jobName(w: Pick<CheckWindow, 'planUID' | 'cluster' | 'startedAt'>, app: string, check: string) {
  const hash = createHash('sha256')
    .update([w.planUID, app, w.cluster ?? '', check, w.startedAt].join('\n'))
    .digest('hex')
    .slice(0, 10);
  const readable = `${app}-${check}`
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `kpromo-${readable ? `${readable}-` : ''}${hash}`;
}

/** Pure: a job check's placeholders ({version}, {digest}, …) replaced with the app's values, unescaped. */
function renderer(vars: CheckVars): (s: string) => string {
  const v = { ...vars, previousVersion: vars.previousVersion ?? '' };
  return (s) => renderTemplate(s, v, (x) => x)!;
}

/** Pure: the KPROMO_ variables every job check's container gets. */
export function jobEnv(job: JobCheck, vars: CheckVars): Array<{ name: string; value: string }> {
  const endpoint = renderer(vars)(job.endpoint ?? 'http://{application}.{namespace}.svc');
  return [
    { name: 'KPROMO_APPLICATION', value: vars.application },
    { name: 'KPROMO_ENVIRONMENT', value: vars.environment },
    { name: 'KPROMO_NAMESPACE', value: vars.namespace },
    { name: 'KPROMO_VERSION', value: vars.version },
    { name: 'KPROMO_PREVIOUS_VERSION', value: vars.previousVersion ?? '' },
    { name: 'KPROMO_DIGEST', value: vars.digest },
    { name: 'KPROMO_ENDPOINT', value: endpoint },
  ];
}

export interface JobLike {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: {
    [k: string]: unknown;
    template?: {
      metadata?: { labels?: Record<string, string> };
      spec?: { [k: string]: unknown; serviceAccountName?: string; containers?: Array<Record<string, unknown>> };
    };
  };
  status?: {
    startTime?: string;
    completionTime?: string;
    active?: number;
    failed?: number;
    succeeded?: number;
    conditions?: Array<{
      type: string;
      status: string;
      reason?: string;
      message?: string;
      lastTransitionTime?: string;
    }>;
  };
}

/**
 * Pure: the Job a job check runs for one app in one window: one container with the check's
 * image, command, args, env (plus the KPROMO_ variables) and resources, placeholders replaced;
 * retried up to the stage's failureLimit (backoffLimit), stopped when the window ends
 * (activeDeadlineSeconds), without privileges, and without a service account token unless the
 * stage names its governed jobServiceAccount.
 */
export function jobManifest(
  check: VerificationCheck,
  vars: CheckVars,
  w: CheckWindow,
): JobLike & Record<string, unknown> {
  const job = check.job!;
  const render = renderer(vars);
  const name = jobName(w, vars.application, check.name);
  const labels = {
    'app.kubernetes.io/managed-by': 'kpromo',
    // A label value: at most 63 characters, ending alphanumeric (an Application name may be longer).
    'promotions.kpromo.dev/application': vars.application.slice(0, 63).replace(/[^a-z0-9]+$/, ''),
    'promotions.kpromo.dev/check': name,
  };
  const remaining = Math.ceil((Date.parse(w.endsAt) - w.now.getTime()) / 1000);
  const container = {
    name: 'check',
    image: render(job.image),
    ...(job.command ? { command: job.command.map(render) } : {}),
    ...(job.args ? { args: job.args.map(render) } : {}),
    env: [...(job.env ?? []).map((e) => ({ name: e.name, value: render(e.value) })), ...jobEnv(job, vars)],
    ...(job.resources ? { resources: job.resources } : {}),
    securityContext: { allowPrivilegeEscalation: false, privileged: false, capabilities: { drop: ['ALL'] } },
  };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace: vars.namespace,
      labels,
      annotations: { 'promotions.kpromo.dev/plan': w.plan, 'promotions.kpromo.dev/check-name': check.name },
    },
    spec: {
      backoffLimit: w.failureLimit,
      activeDeadlineSeconds: Math.max(1, remaining),
      ttlSecondsAfterFinished: TTL_AFTER_FINISHED_S,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          ...(w.serviceAccount ? { serviceAccountName: w.serviceAccount } : {}),
          automountServiceAccountToken: !!w.serviceAccount,
          enableServiceLinks: false,
          securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
          containers: [container],
        },
      },
    },
  };
}

/**
 * Pure: why a Job found under the check's name is not the one the check would run (someone made
 * it beforehand, or the check changed during the window), or undefined when it is.
 */
export function foreignJob(found: JobLike, expected: JobLike): string | undefined {
  const a = found.spec?.template?.spec;
  const b = expected.spec?.template?.spec;
  const pick = (c: Record<string, unknown> | undefined) =>
    JSON.stringify([c?.image, c?.command ?? [], c?.args ?? [], c?.env ?? []]);
  if (found.metadata.labels?.['app.kubernetes.io/managed-by'] !== 'kpromo')
    return `Job ${found.metadata.name} exists but was not made by kpromo`;
  if ((a?.serviceAccountName ?? '') !== (b?.serviceAccountName ?? ''))
    return `Job ${found.metadata.name} runs as service account "${a?.serviceAccountName ?? ''}", not the stage's`;
  if (a?.containers?.length !== 1 || pick(a.containers[0]) !== pick(b?.containers?.[0]))
    return `Job ${found.metadata.name} does not run this check's image, command, args and env`;
  return undefined;
}

/** Pure: where a Job is: still running, or finished (succeeded or failed) with how long it took. */
export function jobOutcome(job: JobLike): {
  done: boolean;
  ok?: boolean;
  durationSeconds?: number;
  message: string;
} {
  const st = job.status ?? {};
  const cond = (t: string) => st.conditions?.find((c) => c.type === t && c.status === 'True');
  const complete = cond('Complete');
  const failed = cond('Failed');
  const name = job.metadata.name;
  const attempts = (st.failed ?? 0) + (st.succeeded ?? 0) + (st.active ?? 0);
  if (!complete && !failed)
    return {
      done: false,
      message: `Job ${name} ${st.active ? 'running' : 'waiting for its pod'}${st.failed ? ` (${st.failed} failed attempt(s), retrying)` : ''}`,
    };
  const end = st.completionTime ?? (complete ?? failed)?.lastTransitionTime;
  const span = st.startTime && end ? (Date.parse(end) - Date.parse(st.startTime)) / 1000 : Number.NaN;
  const durationSeconds = Number.isFinite(span) && span >= 0 ? span : undefined;
  const took = durationSeconds !== undefined ? ` in ${durationSeconds}s` : '';
  if (complete)
    return {
      done: true,
      ok: true,
      ...(durationSeconds !== undefined ? { durationSeconds } : {}),
      message: `Job ${name} succeeded${took}`,
    };
  return {
    done: true,
    ok: false,
    ...(durationSeconds !== undefined ? { durationSeconds } : {}),
    message: `Job ${name} failed${took}${attempts ? ` after ${attempts} attempt(s)` : ''}: ${failed!.reason ?? 'Failed'}${failed!.message ? ` (${failed!.message})` : ''}`,
  };
}

/**
 * Pure: the last lines of a log, bounded in lines and characters, without terminal control
 * characters; undefined when nothing was printed.
 */
export function logTail(text: string | undefined, lines = LOG_TAIL_LINES, chars = LOG_TAIL_CHARS): string | undefined {
  if (!text) return undefined;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point.
  const clean = text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '');
  const kept = clean.replace(/\n+$/, '').split('\n').slice(-lines).join('\n');
  if (!kept.trim()) return undefined;
  return kept.length > chars ? `…${kept.slice(-(chars - 1))}` : kept;
}

/**
 * The tail of the log of the Job's newest pod, or why there is none. Never throws: a Job's result
 * stands without its log (a node that serves no logs, a pod already gone).
 */
async function jobLog(client: KubeRest, namespace: string, name: string): Promise<{ output?: string; note?: string }> {
  try {
    const pods = await client.get<{ items?: Array<{ metadata: { name: string; creationTimestamp?: string } }> }>(
      `${resourcePath(POD, namespace)}?labelSelector=${encodeURIComponent(`${JOB_NAME_LABEL}=${name}`)}`,
    );
    const newest = [...(pods.items ?? [])]
      .sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''))
      .at(-1);
    if (!newest) return { note: 'no logs: the Job has no pod left' };
    const text = await client.getText(`${resourcePath(POD, namespace, newest.metadata.name)}/log`, {
      container: 'check',
      tailLines: LOG_TAIL_LINES,
      limitBytes: LOG_TAIL_CHARS * 4,
    });
    const output = logTail(text);
    return output ? { output } : { note: 'no logs: the container printed nothing' };
  } catch (e) {
    return { note: `no logs: ${(e as Error).message.slice(0, 300)}` };
  }
}

/**
 * job checks: once per window, a Job in the target namespace (created when the first measurement
 * finds none, under a name derived from the window, so a reconcile or a new leader finds it again);
 * every later measurement reads it. It decides the check when it finishes (final), with its
 * duration and its log's tail; while it runs, a measurement has no data, so a Job still running
 * at the end of the window makes the check Inconclusive.
 */
export const jobProvider: CheckProvider = {
  kind: 'job',
  async measure(check, ctx): Promise<Measurement> {
    const problems = jobCheckProblems(check.job);
    if (problems.length) return { ok: false, final: true, message: `check ${check.name}: ${problems.join('; ')}` };
    const w = ctx.window;
    if (!w) throw new Error('a job check runs once per verification window, and none was given');
    const expected = jobManifest(check, ctx.vars, w);
    const { name, namespace } = expected.metadata;
    const query = `Job ${namespace}/${name}`;
    const client = await ctx.client();
    let found = await client.getOrUndefined<JobLike>(resourcePath(JOB, namespace, name));
    if (!found) {
      if (w.now.getTime() >= Date.parse(w.endsAt))
        return { query, message: `Job ${name} was not created: the window ended first` };
      try {
        found = await client.create<JobLike>(resourcePath(JOB, namespace), expected);
      } catch (e) {
        // Created by an earlier round whose result was not saved (a crash, another leader): read it.
        if (!isConflict(e)) throw e;
        found = await client.get<JobLike>(resourcePath(JOB, namespace, name));
      }
    }
    const foreign = foreignJob(found, expected);
    if (foreign) return { query, ok: false, final: true, message: `${foreign}: its result is not evidence` };
    const outcome = jobOutcome(found);
    if (!outcome.done) return { query, message: outcome.message };
    const log = await jobLog(client, namespace!, name);
    return {
      query,
      ok: outcome.ok!,
      final: true,
      ...(outcome.durationSeconds !== undefined ? { durationSeconds: outcome.durationSeconds } : {}),
      ...(log.output ? { output: log.output } : {}),
      message: `${outcome.message}${log.note ? `; ${log.note}` : ''}`,
    };
  },
};
