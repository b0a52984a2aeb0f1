import { workloadsFor } from '../../candidates/runningVersion.js';
import type { CheckProvider } from '../../extension/checkProvider.js';
import { ROLLOUT, resourcePath } from '../../kube/paths.js';

const ANALYSIS_RUN = { group: 'argoproj.io', version: 'v1alpha1', plural: 'analysisruns', kind: 'AnalysisRun' };

interface AnalysisRunLike {
  metadata: { name: string; labels?: Record<string, string>; ownerReferences?: Array<{ kind: string; name: string }> };
  status?: { phase?: string; message?: string };
}

/**
 * Pure: the verdict of a Rollout revision's AnalysisRuns (Argo Rollouts labels each with the
 * revision's rollouts-pod-template-hash and owns it by the Rollout): any Failed/Error fails, all
 * Successful pass, otherwise still running (or none yet).
 */
export function analysisVerdict(
  runs: readonly AnalysisRunLike[],
  rollout: string,
  podHash: string | undefined,
): { ok?: boolean; final: boolean; message: string } {
  const mine = runs.filter(
    (r) =>
      r.metadata.ownerReferences?.some((o) => o.kind === 'Rollout' && o.name === rollout) &&
      (!podHash || r.metadata.labels?.['rollouts-pod-template-hash'] === podHash),
  );
  if (!mine.length)
    return { final: false, message: `no AnalysisRun of Rollout ${rollout} for revision ${podHash ?? '?'} yet` };
  const bad = mine.find((r) => r.status?.phase === 'Failed' || r.status?.phase === 'Error');
  if (bad)
    return {
      ok: false,
      final: true,
      message: `AnalysisRun ${bad.metadata.name} ${bad.status?.phase}${bad.status?.message ? `: ${bad.status.message}` : ''}`,
    };
  const open = mine.filter((r) => r.status?.phase !== 'Successful');
  if (open.length)
    return {
      final: false,
      message: `AnalysisRun ${open.map((r) => `${r.metadata.name} ${r.status?.phase ?? 'Pending'}`).join(', ')}`,
    };
  return { ok: true, final: true, message: `${mine.length} AnalysisRun(s) Successful` };
}

/** analysis checks: the AnalysisRuns of the app's Rollouts for their current revision, read in the target cluster. */
export const analysisProvider: CheckProvider = {
  kind: 'analysis',
  async measure(_check, ctx) {
    const rollouts = workloadsFor(ctx.app, ctx.env.metadata.name).filter((w) => w.kind === 'Rollout');
    if (!rollouts.length)
      return {
        ok: false,
        final: true,
        message: `${ctx.app.metadata.name} has no Rollout workload; analysis checks apply to Argo Rollouts only`,
      };
    const client = await ctx.client();
    const ns = ctx.env.spec.namespace;
    const list = await client.get<{ items: AnalysisRunLike[] }>(resourcePath(ANALYSIS_RUN, ns), ctx.signal);
    const verdicts = [];
    for (const w of rollouts) {
      const ro = await client.getOrUndefined<{ status?: { currentPodHash?: string } }>(
        resourcePath(ROLLOUT, ns, w.name),
      );
      verdicts.push(analysisVerdict(list.items ?? [], w.name, ro?.status?.currentPodHash));
    }
    const failed = verdicts.find((v) => v.ok === false);
    if (failed) return { query: 'AnalysisRuns', ok: false, final: true, message: failed.message };
    const open = verdicts.find((v) => !v.final);
    if (open) return { query: 'AnalysisRuns', message: open.message };
    return { query: 'AnalysisRuns', ok: true, final: true, message: verdicts.map((v) => v.message).join('; ') };
  },
};
