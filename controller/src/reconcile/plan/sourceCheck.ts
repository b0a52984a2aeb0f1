import type { Application } from '@kpromo/api';
import { environmentTagDigest } from '../../candidates/tagDigest.js';
import { versionReader } from '../../candidates/versionReader.js';
import {
  checkCandidatesInSource,
  type ResolvedPlan,
  type SourceTagDigest,
  tagDigestsToRead,
} from '../planDecisions.js';
import type { ReconcileOutcome } from './deps.js';
import { stopInvalidPlan } from './invalid.js';
import type { PlanRun } from './run.js';

/** Registry look-ups at once for one plan: a release train of tag-only apps does not queue them one by one. */
const LOOKUPS_AT_ONCE = 8;
/** How soon a plan waiting for its source's registry looks again. */
const REGISTRY_RETRY_MS = 10_000;

/**
 * Before a promote plan starts: its candidates are the versions running in the source now, the
 * digest always bound ({@link checkCandidatesInSource}). For a source workload that runs a tag only,
 * the digest that tag names is read from the source Environment's registry with its credentials.
 * Returns the outcome when the plan is refused (Failed, nothing written) or waits for the registry;
 * undefined when it may start.
 */
export async function checkSource(run: PlanRun, r: ResolvedPlan): Promise<ReconcileOutcome | undefined> {
  const { deps, plan } = run;
  const read = versionReader(deps.cache);
  const versionOf = (a: Application) => read(a, r.fromEnv);
  const toRead = tagDigestsToRead(plan, r.apps, versionOf);
  const digests = toRead.length
    ? await run.span('promote.sourceDigests', { 'kpromo.apps': toRead.length }, () =>
        readTagDigests(run, r, toRead, versionOf),
      )
    : new Map<Application, SourceTagDigest>();
  const check = checkCandidatesInSource(plan, r.apps, versionOf, (a) => digests.get(a));
  if (check.refused) return stopInvalidPlan(run, check.refused);
  if (check.unread) return waitForRegistry(run, check.unread);
  return undefined;
}

/** The digest each app's source tag names now; a registry or credentials fault is recorded, never thrown. */
async function readTagDigests(
  run: PlanRun,
  r: ResolvedPlan,
  apps: Application[],
  versionOf: (a: Application) => { tag?: string },
): Promise<Map<Application, SourceTagDigest>> {
  const out = new Map<Application, SourceTagDigest>();
  const queue = [...apps];
  const worker = async () => {
    for (let app = queue.shift(); app; app = queue.shift()) {
      const tag = versionOf(app).tag!;
      try {
        out.set(app, {
          digest: await environmentTagDigest(run.deps.resolveDigest, run.deps.control, r.fromEnv, app, tag),
        });
      } catch (e) {
        out.set(app, { error: (e as Error).message });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(LOOKUPS_AT_ONCE, apps.length) }, worker));
  return out;
}

/** A plan about to start whose source registry did not answer: says so (once) and looks again. */
async function waitForRegistry(run: PlanRun, message: string): Promise<ReconcileOutcome> {
  const { status, journal } = run;
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  if (ready?.reason !== 'SourceTagUnresolved' || ready.message !== message) {
    journal.cond('Ready', 'False', 'SourceTagUnresolved', message);
    await journal.save();
  }
  return { requeueAfterMs: REGISTRY_RETRY_MS };
}
