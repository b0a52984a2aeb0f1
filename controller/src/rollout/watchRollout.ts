import type { Application, Environment, WorkloadRef } from '@kpromo/api';
import type { WorkloadKinds } from '../extension/plugin.js';
import type { WorkloadKind } from '../extension/workloadKind.js';
import type { CacheView, Workload } from '../kube/cacheView.js';
import { POD, resourcePath } from '../kube/paths.js';
import type { KubeRest } from '../kube/rest.js';
import { defaultEgress, type Egress, EgressBlocked, EgressError, EgressRedirect } from '../net/guardedFetch.js';
import { redactUrl } from '../net/redactUrl.js';
import { PodSignalReads } from './podSignals.js';
import { isCachedKind } from './registry.js';
import { PAUSED, type PodSignal, type RolloutVerdict, readinessVerdict, rolloutVerdict } from './rolloutVerdict.js';

const processPodReads = new PodSignalReads();

/**
 * Rollout state of all workloads of an app in an Environment, from the workload cache. It does not
 * block or poll: the controller calls it again when a workload event arrives or the timeout is due.
 * Pods are only read (one list) while a workload is not ready yet, to catch crash signals early,
 * and not for every check (see {@link PodSignalReads}).
 */
export async function checkRollout(input: {
  cache: CacheView;
  clientFor(env: Environment): Promise<KubeRest>;
  env: Environment;
  app: Application;
  refs: WorkloadRef[];
  desired: { tag?: string; digest?: string };
  startedAt: Date;
  now: Date;
  timeoutSeconds: number;
  /** SSRF guard for http health checks; the process default (configured by the runtime) when absent. */
  egress?: Egress;
  /** How to judge each workload kind: the built-ins and the plugins' (reconcile/plugins.ts loadPlugins). */
  kinds: WorkloadKinds;
  /** When pods are listed for crash signals; one per process when absent. */
  podReads?: PodSignalReads;
}): Promise<RolloutVerdict> {
  const messages: string[] = [];
  if (!input.refs.length) {
    return {
      state: 'Failed',
      reason: 'NoWorkload',
      message: `Application ${input.app.metadata.name} has no workload for ${input.env.metadata.name}`,
    };
  }
  const kinds = input.kinds;
  let paused = false;
  for (const ref of input.refs) {
    const kind = kinds.get(ref.kind ?? 'Deployment');
    if (!kind)
      return {
        state: 'Failed',
        reason: 'UnknownWorkloadKind',
        message: `Application ${input.app.metadata.name} workload ${ref.name}: kind ${kinds.unknown(ref.kind ?? 'Deployment')}`,
      };
    const w = isCachedKind(kind.kind)
      ? input.cache.getWorkload(input.env, kind.kind, ref.name)
      : await readWorkload(input, kind, ref.name);
    const base = {
      workload: w,
      workloadName: ref.name,
      container: ref.container,
      desired: input.desired,
      startedAt: input.startedAt,
      now: input.now,
      timeoutSeconds: input.timeoutSeconds,
      kind,
    };
    let v = rolloutVerdict(base);
    if (v.state === 'Progressing' && v.reason === 'RollingOut' && w?.spec?.selector?.matchLabels) {
      const sel = Object.entries(w.spec.selector.matchLabels)
        .map(([k, val]) => `${k}=${val}`)
        .join(',');
      const ns = input.env.spec.namespace;
      try {
        const pods = await (input.podReads ?? processPodReads).read(
          `${input.env.metadata.namespace}/${input.env.metadata.name}/${ns}/${sel}`,
          input.startedAt,
          async () => {
            const rest = await input.clientFor(input.env);
            return (
              await rest.request<{ items: PodSignal[] }>('GET', resourcePath(POD, ns), {
                query: { labelSelector: sel },
              })
            ).items;
          },
        );
        if (pods) v = rolloutVerdict({ ...base, pods });
      } catch {
        // crash signals are a bonus; the workload status still decides
      }
    }
    if (v.state === 'Ready' && w && kind.confirm) {
      // e.g. a CronJob's next run with the promoted image, when the Application asks to wait for it.
      const more = await kind.confirm({
        obj: w,
        ref,
        desired: input.desired,
        namespace: input.env.spec.namespace,
        client: () => input.clientFor(input.env),
      });
      if (more) v = readinessVerdict(input, w.metadata.name, more);
    }
    if (v.state === 'Failed') return v;
    if (v.state === 'Progressing') {
      messages.push(v.message);
      if (v.reason === PAUSED) paused = true;
    }
  }
  if (messages.length)
    return { state: 'Progressing', reason: paused ? PAUSED : 'RollingOut', message: messages.join('; ') };
  const health = await runHealthChecks(input.app, input.env.metadata.name, input.startedAt, input.now, input.egress);
  if (health) return health;
  return {
    state: 'Ready',
    reason: 'RolloutComplete',
    message: `${input.refs.map((r) => r.name).join(', ')} ready in ${input.env.metadata.name}`,
  };
}

/** A workload of a kind the informers do not watch (a plugin's), read from the Environment's cluster. */
async function readWorkload(
  input: { clientFor(env: Environment): Promise<KubeRest>; env: Environment },
  kind: WorkloadKind,
  name: string,
): Promise<Workload | undefined> {
  const rest = await input.clientFor(input.env);
  return rest.getOrUndefined<Workload>(resourcePath(kind.resource, input.env.spec.namespace, name));
}

export const HEALTH_CHECK_TIMEOUT_MS = 5_000;

/**
 * What a failed check says in status: method, redacted URL and the kind of failure, never the
 * response body or the text of an internal error.
 */
export function healthCheckFailure(url: string, expect: number, err: unknown): string {
  const target = `GET ${redactUrl(url)}`;
  if (err instanceof EgressBlocked) return `${target} ${err.message}`;
  if (err instanceof EgressRedirect)
    return `${target} answered ${err.status} (expected ${expect}); redirect${err.locationHost ? ` to host ${err.locationHost}` : ''} not followed`;
  if (err instanceof EgressError) return `${target} ${err.message}`;
  return `${target} failed`;
}

/**
 * The Application's http health checks, once the workloads are ready: each must answer its
 * expectStatus; a failing check keeps the app RollingOut until its own timeoutSeconds (counted
 * from the app start), then fails it with HealthCheckFailed. workloadReady checks are the rollout itself.
 * Requests go through the egress guard: no internal addresses unless egress.allowedCidrs allows them.
 */
export async function runHealthChecks(
  app: Application,
  envName: string,
  startedAt: Date,
  now: Date,
  egress: Egress = defaultEgress(),
): Promise<RolloutVerdict | undefined> {
  for (const hc of app.spec.healthChecks ?? []) {
    if (hc.type !== 'http' || !hc.url) continue;
    const url = hc.url.replaceAll('{environment}', envName);
    const expect = hc.expectStatus ?? 200;
    let got: string;
    try {
      const res = await egress.fetch(url, {
        method: 'GET',
        timeoutMs: HEALTH_CHECK_TIMEOUT_MS,
        maxBodyBytes: 0,
        // Never followed either way; a check may expect the 3xx itself.
        redirects: expect >= 300 && expect < 400 ? 'return' : 'error',
      });
      if (res.status === expect) continue;
      got = `GET ${redactUrl(url)} answered ${res.status} (expected ${expect})`;
    } catch (e) {
      got = healthCheckFailure(url, expect, e);
    }
    const msg = `health check ${hc.name}: ${got}`;
    const timedOut = now.getTime() - startedAt.getTime() >= (hc.timeoutSeconds ?? 300) * 1000;
    return timedOut
      ? { state: 'Failed', reason: 'HealthCheckFailed', message: msg }
      : { state: 'Progressing', reason: 'HealthCheck', message: msg };
  }
  return undefined;
}
