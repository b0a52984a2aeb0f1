import type { DeliveryVerdict } from '../extension/deliveryMethod.js';

type Condition = { type: string; status: string; reason?: string; message?: string; observedGeneration?: number };

/**
 * The parts of a Flux `helm.toolkit.fluxcd.io/v2` HelmRelease the verdict reads, as helm-controller
 * writes them (api/v2 HelmReleaseStatus and Snapshot).
 */
export interface HelmReleaseObject {
  metadata: { name: string; namespace?: string; generation?: number };
  spec?: { suspend?: boolean; values?: Record<string, unknown> };
  status?: {
    observedGeneration?: number;
    lastAttemptedGeneration?: number;
    /** Chart version of the last install/upgrade attempt. */
    lastAttemptedRevision?: string;
    conditions?: Condition[];
    /** Helm releases, newest first, down to the previous successful one. */
    history?: Array<{
      chartName?: string;
      chartVersion?: string;
      appVersion?: string;
      /** Helm release revision. */
      version?: number;
      /** Helm release status: deployed, failed, superseded, pending-upgrade… */
      status?: string;
      action?: string;
    }>;
  };
}

/** A value kpromo wrote into `spec.values` (the Environment field that named its path, for messages). */
export interface WrittenValue {
  path: string[];
  value: string;
  field: string;
}

/**
 * Ready=False reasons meaning the release of this generation failed (helm-controller's api/v2
 * condition reasons, plus ValuesError: the values cannot be composed). Any other Ready=False
 * reason (DependencyNotReady, SourceNotReady, a controller-side error) is retried by helm-controller
 * and waited for, bounded by the rollout timeout.
 */
const RELEASE_FAILED = new Set([
  'InstallFailed',
  'UpgradeFailed',
  'TestFailed',
  'RollbackSucceeded',
  'RollbackFailed',
  'UninstallSucceeded',
  'UninstallFailed',
  'ArtifactFailed',
  'ValuesError',
]);

/** The value at `path` of attacker-written values: own properties only, never the prototype chain. */
function valueAt(values: unknown, path: readonly string[]): unknown {
  let node = values;
  for (const p of path) {
    if (node === null || typeof node !== 'object' || Array.isArray(node) || !Object.hasOwn(node, p)) return undefined;
    node = (node as Record<string, unknown>)[p];
  }
  return node;
}

const clip = (s: string | undefined) => (s ?? '').slice(0, 500);

/**
 * Where a HelmRelease stands with the values kpromo wrote (pure; from helm-controller's documented
 * status, docs/spec/v2/helmreleases.md "Conditions"). A condition counts only when it was set for the
 * current `metadata.generation` (its observedGeneration), so a verdict about kpromo's patch is never
 * read from a status helm-controller wrote before it.
 * - failed (HelmReleaseValuesChanged): `spec.values` no longer carries what kpromo wrote (another
 *   writer, e.g. a Flux Kustomization applying the HelmRelease from git, replaced it);
 * - failed: Stalled=True (helm-controller gave up: retries exhausted, invalid configuration), or
 *   Ready=False with a release failure reason while helm-controller is not retrying (no Reconciling
 *   condition with reason ProgressingWithRetry): the Ready reason and message;
 * - applied: Ready=True and the newest `status.history` entry is `deployed` (of the chart version
 *   last attempted);
 * - progressing otherwise (not reconciled yet, Ready=Unknown, retrying, waiting for a dependency or
 *   source, suspended: the message says which).
 */
export function helmReleaseVerdict(
  hr: HelmReleaseObject | undefined,
  ref: string,
  written: readonly WrittenValue[],
): DeliveryVerdict {
  if (!hr) return { state: 'Progressing', message: `waiting for HelmRelease ${ref} (not found)` };
  for (const w of written) {
    const now = valueAt(hr.spec?.values, w.path);
    if (now !== w.value)
      return {
        state: 'Failed',
        reason: 'HelmReleaseValuesChanged',
        message: `HelmRelease ${ref}: spec.values.${w.path.join('.')} (${w.field}) is ${clip(JSON.stringify(now) ?? 'unset')}, not "${w.value}" as kpromo wrote it; another writer changed it (e.g. a Flux Kustomization applying the HelmRelease from git): let one writer own the values, or use delivery.method git`,
      };
  }
  if (hr.spec?.suspend)
    return { state: 'Progressing', message: `HelmRelease ${ref} is suspended; helm-controller does not release it` };
  const st = hr.status ?? {};
  const gen = hr.metadata.generation;
  const cond = (type: string) => st.conditions?.find((c) => c.type === type);
  // A condition without observedGeneration falls back to the status' own (older controllers).
  const observed = (c: Condition) => c.observedGeneration ?? st.observedGeneration;
  const current = (c: Condition | undefined): c is Condition => !!c && (gen === undefined || observed(c) === gen);
  const ready = cond('Ready');
  const stalled = cond('Stalled');
  const what = `HelmRelease ${ref}${gen === undefined ? '' : ` generation ${gen}`}`;

  if (current(stalled) && stalled.status === 'True') {
    const failed = ready?.status === 'False' && current(ready);
    return {
      state: 'Failed',
      reason: (failed && ready.reason) || stalled.reason || 'Stalled',
      message: `${what} stalled (${stalled.reason ?? 'Stalled'}: ${clip(stalled.message)})${failed ? `: ${ready.reason}: ${clip(ready.message)}` : ''}`,
    };
  }
  if (!current(ready))
    return {
      state: 'Progressing',
      message: `waiting for helm-controller to reconcile ${what} (Ready ${ready ? `last set for generation ${observed(ready) ?? 'unknown'}` : 'not reported yet'})`,
    };
  if (ready.status === 'True') {
    const latest = st.history?.[0];
    const chart = latest && `${latest.chartName ?? '?'}@${latest.chartVersion ?? '?'}`;
    if (!latest) return { state: 'Progressing', message: `${what} is Ready but status.history has no release yet` };
    if (latest.status !== 'deployed')
      return {
        state: 'Progressing',
        message: `${what} is Ready but its latest release (${chart}, revision ${latest.version ?? '?'}) is ${latest.status ?? 'unknown'}`,
      };
    if (st.lastAttemptedRevision && latest.chartVersion && latest.chartVersion !== st.lastAttemptedRevision)
      return {
        state: 'Progressing',
        message: `${what} is Ready but its latest release is chart ${latest.chartVersion}, not the last attempted ${st.lastAttemptedRevision}`,
      };
    return {
      state: 'Applied',
      message: `${what} released: ${chart}${latest.appVersion ? ` (app ${latest.appVersion})` : ''}, Helm revision ${latest.version ?? '?'} deployed${latest.action ? ` by ${latest.action}` : ''}`,
    };
  }
  const reason = ready.reason ?? 'Unknown';
  if (ready.status === 'False' && RELEASE_FAILED.has(reason)) {
    const reconciling = cond('Reconciling');
    if (reconciling?.status === 'True' && reconciling.reason === 'ProgressingWithRetry')
      return {
        state: 'Progressing',
        message: `helm-controller retries ${what} after ${reason}: ${clip(ready.message)}`,
      };
    return { state: 'Failed', reason, message: `${what} ${reason}: ${clip(ready.message)}` };
  }
  return {
    state: 'Progressing',
    message: `${what} not ready yet (${ready.status === 'False' ? reason : 'reconciling'}): ${clip(ready.message)}`,
  };
}
