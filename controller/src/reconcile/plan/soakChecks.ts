import type { SoakReset } from '@kpromo/api';
import type { CheckContext } from '../../extension/checkProvider.js';
import { defaultEgress } from '../../net/guardedFetch.js';
import { checkSoakResetDecision, type SoakCheckSample, withSoakReset } from '../../policy/soak.js';
import { verificationFor } from '../../verification/settings.js';
import { checkKind, conditionText, judge } from '../../verification/verdict.js';
import { soakSources } from '../planGate.js';
import type { PlanRun } from './run.js';

/**
 * The check kinds sampled during a soak: those that measure once per call. An Argo analysis or a job
 * check starts a run per verification window, which a soak has none of.
 */
const SAMPLED_KINDS: ReadonlySet<string> = new Set(['prometheus', 'http']);

/**
 * A plan held Soaking into a stage with soak.resetOn.failedChecks: samples once, in the source
 * Environment, the source stage's verification checks (and each candidate's Application's own
 * there) for every candidate, and records the restart a failed sample causes
 * ({@link checkSoakResetDecision}) in `run.status.soakResets` (saved with the gate). Returns the
 * source stage's interval, when to sample again, or undefined when the stage does not sample
 * (no failedChecks, no checks, a fleet source).
 */
export async function sampleSoakChecks(run: PlanRun): Promise<{ intervalMs: number; reset?: SoakReset } | undefined> {
  const { deps, plan, status, namespace } = run;
  const flow = deps.cache.getFlow(namespace, plan.spec.flow);
  const stage = flow?.spec.stages.find((s) => s.environment === plan.spec.to);
  if (!flow || !stage?.soak?.resetOn.failedChecks) return undefined;
  const env = deps.cache.getEnvironment(namespace, plan.spec.from);
  // A fleet's clusters are measured one by one during verification; a soak samples single clusters.
  if (!env || env.spec.clusters) return undefined;
  let intervalMs: number | undefined;
  const samples: SoakCheckSample[] = [];
  const source = soakSources(plan, deps.cache);
  for (const c of plan.spec.candidates) {
    const app = deps.cache.getApplication(namespace, c.application);
    const settings = app && verificationFor(flow, app, plan.spec.from);
    if (!app || !settings) continue;
    intervalMs = Math.min(intervalMs ?? settings.intervalMs, settings.intervalMs);
    const v = source(c.application);
    const ctx: CheckContext = {
      env,
      app,
      vars: {
        application: c.application,
        namespace: env.spec.namespace,
        environment: env.metadata.name,
        version: c.from.tag,
        digest: v?.digest ?? c.from.digest,
      },
      client: () => deps.clientFor(env),
      egress: deps.egress ?? defaultEgress(),
      ...(run.signal ? { signal: run.signal } : {}),
    };
    const measured = await Promise.all(
      settings.checks
        .filter((check) => SAMPLED_KINDS.has(checkKind(check)))
        .map(async (check): Promise<SoakCheckSample> => {
          const provider = deps.checkProviders.get(checkKind(check));
          try {
            const m = provider ? await provider.measure(check, ctx) : undefined;
            const ok = m ? judge(check, m) : undefined;
            const cond = conditionText(check);
            const detail =
              m?.value !== undefined ? `value ${m.value}${cond ? `, passes when ${cond}` : ''}` : m?.message;
            return { application: c.application, check: check.name, ok, ...(detail ? { detail } : {}) };
          } catch {
            // Measuring failed (source unreachable): no sample, never a failure.
            return { application: c.application, check: check.name, ok: undefined };
          }
        }),
    );
    samples.push(...measured);
  }
  if (intervalMs === undefined) return undefined;
  const d = checkSoakResetDecision({ plan: { ...plan, status }, stage, samples, source, now: run.now() });
  if (d.op !== 'reset') return { intervalMs };
  status.soakResets = withSoakReset(status.soakResets, d.reset);
  return { intervalMs, reset: d.reset };
}
