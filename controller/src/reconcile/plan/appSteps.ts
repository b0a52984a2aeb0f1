import type { EnvironmentVersion, VerificationProgress } from '@kpromo/api';
import { runningVersion, workloadsFor } from '../../candidates/runningVersion.js';
import { environmentTagDigest } from '../../candidates/tagDigest.js';
import type { CheckContext } from '../../extension/checkProvider.js';
import { registryEndpoint } from '../../extension/credentials.js';
import type { DeliveryResult } from '../../extension/deliveryMethod.js';
import { PermanentAppError } from '../../extension/errors.js';
import { defaultEgress } from '../../net/guardedFetch.js';
import { MAX_EVIDENCE_COPIED } from '../../oci/referrers.js';
import { checkRollout } from '../../rollout/watchRollout.js';
import { registryRepository } from '../../util/imageRef.js';
import { measureRound } from '../../verification/measure.js';
import { type VerificationSettings, verificationFor } from '../../verification/settings.js';
import {
  failedCheck,
  foldMeasurements,
  startVerification,
  verdictReason,
  verificationSummary,
  withoutChecks,
} from '../../verification/verdict.js';
import { claimKey } from '../planDecisions.js';
import { automaticRollback } from '../planGate.js';
import { pullRequestDelivery } from '../pullRequestDecisions.js';
import { renderTag } from '../tagTemplate.js';
import { iso } from '../time.js';
import { VERIFICATION_FAILURE_REASONS } from './onFailure.js';
import { mergeOf, PULL_REQUEST_POLL_MS, writeToPullRequestBranch } from './pullRequest.js';
import type { AppStep } from './run.js';
import { attestPromotedImage, verifySourceSignatures } from './supplyChainSteps.js';

/**
 * Advances one app as far as it can go now: Pending -> Copying -> Writing -> RollingOut ->
 * [Verifying ->] Succeeded|Failed. Each step stores its intent before its side effect and its result right after,
 * so a step is skipped once done (`copied`, `written`). Returns a requeue delay while a rollout is
 * in progress.
 */
export async function advanceApp(c: AppStep): Promise<number | undefined> {
  const { ap } = c;
  if (ap.phase === 'Pending') await chooseTarget(c);
  if (ap.phase === 'Copying' && !ap.copied) await copy(c);
  if (ap.phase === 'Copying' && ap.copied) ap.phase = 'Writing';
  if (ap.phase === 'Writing' && !ap.written) await attestPromotedImage(c);
  if (ap.phase === 'Writing' && !ap.written) await write(c);
  if (ap.phase === 'Writing' && ap.written) ap.phase = 'RollingOut';
  if (ap.phase === 'RollingOut')
    return c.run.span('promote.rollout', { 'kpromo.app': ap.application }, () => verdict(c));
  if (ap.phase === 'Verifying') return c.run.span('promote.verify', { 'kpromo.app': ap.application }, () => verify(c));
  return undefined;
}

const targetRepository = (c: AppStep) =>
  registryRepository(c.r.toEnv.spec.registry.prefix, c.app.spec.image.repository);

/**
 * Pure: what ran in the target before a plan changed it, from the controller's own observations
 * only: the workload it reads now (`before`), else the version it last recorded in the
 * Application's status for that environment (`recorded`; in a fleet, that cluster's). Undefined
 * when neither knows: a rollback of the app is then refused (NoPreviousVersion).
 */
export function observedPrevious(
  before: Pick<EnvironmentVersion, 'tag' | 'digest'>,
  recorded?: Pick<EnvironmentVersion, 'tag' | 'digest' | 'clusters'>,
  cluster?: string,
): { tag?: string; digest?: string } | undefined {
  const known = (v?: { tag?: string; digest?: string }) =>
    v && (v.tag || v.digest)
      ? { ...(v.tag ? { tag: v.tag } : {}), ...(v.digest ? { digest: v.digest } : {}) }
      : undefined;
  return known(before) ?? known(cluster ? recorded?.clusters?.find((x) => x.cluster === cluster) : recorded);
}

/** Decides the target tag/digest and remembers what ran before, then stores that before any side effect. */
async function chooseTarget(c: AppStep): Promise<void> {
  const { run, r, app, ap } = c;
  const { deps, plan } = run;
  const before = runningVersion(deps.cache, app, r.toEnv);
  if (c.isRollback) {
    const orig = r.original?.status?.apps?.find((a) => a.application === ap.application);
    if (!orig?.previous?.digest || !orig.previous.tag) {
      ap.phase = 'Failed';
      ap.reason = 'NoPreviousVersion';
      ap.message = `plan ${plan.spec.rollbackOf} recorded no previous version (tag and digest) of ${ap.application} in ${plan.spec.to}: the controller could not read what ran there when that plan started (cluster not synced, no workload yet, or a tag no registry lookup resolved), and it never restores a version written into a plan; restore ${ap.application} by hand, or promote the version you want with a new plan`;
      ap.finishedAt = iso(run.now());
      await run.journal.save();
      return;
    }
    ap.targetTag = orig.previous.tag;
    ap.digest = orig.previous.digest;
    ap.copied = true; // the previous image is already in the target registry
    // An automatic rollback never fights a person: when the app runs neither what the plan
    // deployed nor what it replaced, someone already acted, and it is left alone.
    if (
      automaticRollback(plan, deps.cache) &&
      before.digest &&
      before.digest !== orig.digest &&
      before.digest !== orig.previous.digest
    ) {
      ap.phase = 'Failed';
      ap.reason = 'ChangedSince';
      ap.message = `left alone: ${ap.application} in ${plan.spec.to} now runs ${before.tag ?? before.digest}, neither what ${plan.spec.rollbackOf} deployed nor what it replaced; someone already acted`;
      ap.finishedAt = iso(run.now());
      await run.journal.save();
      return;
    }
  } else {
    const cand = plan.spec.candidates.find((x) => x.application === ap.application)!;
    ap.targetTag = renderTag(r.flow.spec.tagTemplate, {
      tag: cand.from.tag,
      digest: cand.from.digest,
      time: c.startedAt,
    });
    ap.digest = cand.from.digest;
    // A fleet copies the image once for the stage: a cluster of a later wave finds it copied.
    const shared = c.cluster ? run.status.apps?.find((a) => a.application === ap.application) : undefined;
    if (shared?.copied && shared.targetTag === ap.targetTag) ap.copied = true;
  }
  // What a rollback will restore: the controller's own observations only, never spec.candidates[].to
  // (whoever creates the plan writes it, and a rollback deploys it without a copy or signature check).
  const recorded = app.status?.versions?.find((v) => v.environment === plan.spec.to);
  const prev = observedPrevious(before, recorded, c.cluster);
  if (prev?.tag && !prev.digest) {
    // A workload pinned by tag only: the digest that tag names in the target registry now.
    const digest = await environmentTagDigest(deps.resolveDigest, deps.control, r.toEnv, app, prev.tag).catch(
      () => undefined,
    );
    if (digest) prev.digest = digest;
  }
  if (prev) ap.previous = prev;
  ap.phase = ap.copied ? 'Writing' : 'Copying';
  ap.startedAt = iso(run.now());
  ap.reason = undefined;
  ap.message = undefined;
  await run.journal.save();
  // Ours now (in the status); the claim covers the moment until the cache shows it to other plans.
  deps.claims?.set(claimKey(plan.metadata.namespace, plan.spec.to, ap.application), plan.metadata.name);
}

/**
 * What the copy left in the source, for the app's message: anyone who may push to the source can
 * attach referrers, so past the cap they are left (Sigstore bundles go first), never a failure.
 */
function evidenceLeft(res: { evidenceSkipped?: number; evidenceUnread?: boolean }): string {
  if (!res.evidenceSkipped && !res.evidenceUnread) return '';
  return `; ${res.evidenceSkipped ?? 0}${res.evidenceUnread ? '+' : ''} more referrer(s) of the source left behind (kpromo carries at most ${MAX_EVIDENCE_COPIED}, Sigstore bundles first): prune the source's junk referrers`;
}

/** Copies the candidate's digest from the source to the target registry under the target tag. */
async function copy(c: AppStep): Promise<void> {
  const { run, r, app, ap } = c;
  const { plan } = run;
  const cand = plan.spec.candidates.find((x) => x.application === ap.application)!;
  const fromRepo = registryRepository(r.fromEnv.spec.registry.prefix, app.spec.image.repository);
  const toRepo = targetRepository(c);
  const inFlight = c.copies?.get(ap.application);
  if (inFlight) {
    // Another cluster of this wave copies the same image to the stage's registry: its outcome is ours.
    await inFlight;
    ap.copied = true;
    ap.phase = 'Writing';
    await run.journal.save();
    return;
  }
  const copying = copyOnce(c, fromRepo, toRepo, cand.from.digest);
  c.copies?.set(ap.application, copying);
  const res = await copying;
  ap.copied = true;
  ap.phase = 'Writing';
  ap.message = `copied to ${r.toEnv.spec.registry.host}/${toRepo}:${ap.targetTag} (${res.blobsCopied} copied, ${res.blobsMounted} mounted, ${res.blobsSkipped} present${res.evidence ? `; ${res.evidence} signature(s), attestation(s) or SBOM(s) carried along` : ''}${evidenceLeft(res)})`;
  await run.journal.save();
  run.announce.event('Normal', 'ImageCopied', `${ap.application}: ${ap.message}`);
}

/** Checks the source's signatures, then copies the digest to the target registry under the target tag. */
async function copyOnce(c: AppStep, fromRepo: string, toRepo: string, digest: string) {
  const { run, r, ap } = c;
  const { deps } = run;
  await verifySourceSignatures(c);
  deps.fence?.(run.namespace);
  return run.span('promote.copy', { 'kpromo.app': ap.application }, async () =>
    deps.copyImage({
      source: {
        ...(await registryEndpoint(deps.control, r.fromEnv, fromRepo)),
        repository: fromRepo,
        reference: digest,
      },
      target: { ...(await registryEndpoint(deps.control, r.toEnv, toRepo)), repository: toRepo, tag: ap.targetTag! },
      expectedDigest: digest,
      signal: run.signal,
    }),
  );
}

/** Writes the desired state through the target Environment's delivery method. */
async function write(c: AppStep): Promise<void> {
  const { run, r, app, ap } = c;
  const { deps, plan } = run;
  const image = `${r.toEnv.spec.registry.host}/${targetRepository(c)}`;
  const ref = `${image}:${ap.targetTag}@${ap.digest}`;
  const method = r.toEnv.spec.delivery.method;
  const delivery = deps.deliveryMethods.get(method);
  await run.span('promote.write', { 'kpromo.app': ap.application, 'kpromo.delivery': method }, async () => {
    deps.fence?.(run.namespace);
    // validatePlan checked the method with the same registry; this only guards a caller that did not.
    if (!delivery)
      throw new PermanentAppError('InvalidEnvironment', `delivery.method ${deps.deliveryMethods.unknown(method)}`);
    const deliver = (branch?: { name: string; from: string; head?: string }) =>
      delivery.deliver({
        env: r.toEnv,
        app,
        plan,
        action: c.isRollback ? 'rollback' : 'promote',
        image,
        tag: ap.targetTag!,
        digest: ap.digest!,
        ref,
        client: () => deps.clientFor(r.toEnv),
        control: deps.control,
        commitImageChange: (req) => deps.commitImageChange(req),
        fence: () => deps.fence?.(run.namespace),
        signal: run.signal,
        ...(branch ? { branch } : {}),
      }) as Promise<DeliveryResult | undefined>;
    // Through a pull request: to the plan's branch, one app at a time (plan/pullRequest.ts).
    const res = pullRequestDelivery(r.toEnv) ? await writeToPullRequestBranch(run, r, deliver) : await deliver();
    if (res?.commit !== undefined) ap.commit = res.commit;
  });
  ap.written = true;
  ap.phase = 'RollingOut';
  ap.message = `desired state written (${method}${ap.commit ? ` commit ${ap.commit.slice(0, 12)}` : ''}); waiting for rollout`;
  await run.journal.save();
  run.announce.event(
    'Normal',
    'DesiredStateWritten',
    `${ap.application}: ${ref} via ${method}${c.cluster ? ` in cluster ${c.cluster}` : ''}`,
  );
}

/** Judges the rollout (workload kinds, health checks); records progress, success or failure. */
async function verdict(c: AppStep): Promise<number | undefined> {
  const { run, r, app, ap } = c;
  const { deps, plan } = run;
  // Through a pull request the rollout starts at the merge: until then the app waits for it.
  const merge = mergeOf(run, r);
  if (merge && 'waiting' in merge) {
    await progress(c, merge.waiting);
    return PULL_REQUEST_POLL_MS;
  }
  const started = new Date(ap.startedAt ?? c.startedAt);
  const appStart = merge && merge.at > started ? merge.at : started;
  const left = appStart.getTime() + c.timeoutSeconds * 1000 - run.now().getTime();
  // The delivery method's own part first (e.g. Flux applying the commit), then the workloads.
  const delivery = deps.deliveryMethods.get(r.toEnv.spec.delivery.method);
  const dv = await delivery?.rollout?.({
    env: r.toEnv,
    app,
    plan,
    ...(merge ? { commit: merge.commit } : ap.commit ? { commit: ap.commit } : {}),
    ...(ap.targetTag ? { tag: ap.targetTag } : {}),
    ...(ap.digest ? { digest: ap.digest } : {}),
    client: () => deps.clientFor(r.toEnv),
    control: deps.control,
  });
  if (dv?.state === 'Failed' || (dv?.state === 'Progressing' && left <= 0))
    return finish(
      c,
      'Failed',
      dv.state === 'Failed' ? dv.reason : 'RolloutTimeout',
      dv.state === 'Failed' ? dv.message : `timed out after ${c.timeoutSeconds}s: ${dv.message}`,
    );
  if (dv?.state === 'Progressing') {
    await progress(c, dv.message);
    // A GitOps agent polls its source; look again soon, bounded by the rollout timeout.
    return Math.max(250, Math.min(left + 100, 3_000));
  }
  const v = await checkRollout({
    cache: deps.cache,
    clientFor: deps.clientFor,
    env: r.toEnv,
    app,
    refs: workloadsFor(app, r.toEnv.metadata.name),
    desired: { tag: ap.targetTag, digest: ap.digest },
    startedAt: appStart,
    now: run.now(),
    timeoutSeconds: c.timeoutSeconds,
    kinds: deps.workloadKinds,
  });
  if (v.state === 'Progressing') {
    await progress(c, v.message, v.reason === 'Paused' ? 'Paused' : undefined);
    return Math.max(250, Math.min(left + 100, 15_000));
  }
  // Rollbacks restore a known-good version: they are not held to the stage's evidence.
  const settings = c.isRollback ? undefined : verificationFor(r.flow, app, r.toEnv.metadata.name);
  if (v.state === 'Ready' && settings) return startVerifying(c, settings, v.message);
  if (v.state === 'Failed' && settings?.checks.some((x) => x.analysis)) {
    // Argo Rollouts aborts a Rollout whose analysis failed: that is a failed verification, and the
    // stage's onFailure applies to it, not only a failed rollout.
    const analysis = { ...settings, checks: settings.checks.filter((x) => x.analysis) };
    const start = startVerification(analysis, run.now());
    const judged = foldMeasurements(
      start,
      analysis,
      await measureRound(analysis, start, checkContext(c, analysis, start), deps.checkProviders),
      run.now(),
    );
    if (judged.verdict === 'Failed') {
      ap.verification = judged;
      return finish(
        c,
        'Failed',
        'VerificationFailed',
        `verification failed: ${failedCheck(judged)?.message ?? v.message}`,
      );
    }
  }
  return finish(c, v.state === 'Ready' ? 'Succeeded' : 'Failed', v.reason, v.message);
}

/** What the verification checks of this app measure with, in the window `progress` records. */
function checkContext(c: AppStep, s: VerificationSettings, progress: VerificationProgress): CheckContext {
  const { run, r, app, ap } = c;
  const { plan } = run;
  return {
    env: r.toEnv,
    app,
    vars: {
      application: app.metadata.name,
      namespace: r.toEnv.spec.namespace,
      environment: r.toEnv.metadata.name,
      ...(c.cluster ? { cluster: c.cluster } : {}),
      version: ap.targetTag ?? '',
      ...(ap.previous?.tag ? { previousVersion: ap.previous.tag } : {}),
      digest: ap.digest ?? '',
    },
    client: () => run.deps.clientFor(r.toEnv),
    egress: run.deps.egress ?? defaultEgress(),
    window: {
      plan: plan.metadata.name,
      planUID: plan.metadata.uid ?? plan.metadata.name,
      ...(c.cluster ? { cluster: c.cluster } : {}),
      startedAt: progress.startedAt,
      endsAt: progress.endsAt,
      failureLimit: s.failureLimit,
      ...(s.jobServiceAccount ? { serviceAccount: s.jobServiceAccount } : {}),
      now: run.now(),
    },
    ...(run.signal ? { signal: run.signal } : {}),
  };
}

/** Rolled out and healthy: the verification window starts now (stored before the first measurement). */
async function startVerifying(c: AppStep, settings: VerificationSettings, rolledOut: string): Promise<number> {
  const { run, ap } = c;
  ap.phase = 'Verifying';
  ap.verification = startVerification(settings, run.now());
  ap.reason = undefined;
  ap.message = `${rolledOut}; verifying ${settings.checks.length} check(s) until ${ap.verification.endsAt}`;
  progressWrittenAt.delete(progressKey(c));
  await run.journal.save();
  run.announce.event('Normal', 'Verifying', `${ap.application}: ${ap.message}`);
  return 0;
}

/**
 * One round of the app's verification when it is due: measures the checks still running, folds the
 * values into the status (the values are the evidence, stored every round) and ends the app when
 * the verdict is in: Succeeded when every check passed, Failed (VerificationFailed or
 * VerificationInconclusive) otherwise; the stage's onFailure then acts on the plan (onFailure.ts).
 */
async function verify(c: AppStep): Promise<number | undefined> {
  const { run, r, app, ap } = c;
  const progress = ap.verification;
  // Verifying without a record of the window is no evidence: fail rather than pass.
  if (!progress)
    return finish(c, 'Failed', 'VerificationRemoved', 'verification failed: the record of its window is missing');
  // Every check removed during the window (stage and Application): each fails, naming itself.
  const settings = verificationFor(r.flow, app, r.toEnv.metadata.name) ?? withoutChecks(progress);
  const now = run.now();
  const due = progress.nextAt ? Date.parse(progress.nextAt) - now.getTime() : 0;
  if (due > 0 && settings.checks.length) return due;
  const measured = await measureRound(settings, progress, checkContext(c, settings, progress), run.deps.checkProviders);
  const next = foldMeasurements(progress, settings, measured, run.now());
  ap.verification = next;
  if (next.verdict === 'Passed') return finish(c, 'Succeeded', 'Verified', `verified: ${verificationSummary(next)}`);
  if (next.verdict === 'Failed' || next.verdict === 'Inconclusive') {
    const f = failedCheck(next);
    return finish(c, 'Failed', verdictReason(next), `verification failed: ${f?.message ?? verificationSummary(next)}`);
  }
  ap.message = `verifying until ${next.endsAt}: ${verificationSummary(next)}`;
  await run.journal.save();
  return Math.max(250, Date.parse(next.nextAt!) - run.now().getTime());
}

/** A rollout's progress message is written at most this often per app (each write is a status PUT). */
const PROGRESS_WRITE_INTERVAL_MS = 10_000;
/** When each app's progress message was last written, by plan uid and app (dropped when it finishes). */
const progressWrittenAt = new Map<string, number>();
const progressKey = (c: AppStep) =>
  `${c.run.plan.metadata.uid ?? c.run.plan.metadata.name}/${c.ap.application}${c.cluster ? `@${c.cluster}` : ''}`;

/**
 * Shows rollout progress in the status without a write per event: the message is kept on the app
 * (the next save, of this app or another of the plan, carries it) and written on its own only for
 * rollouts that take longer than the interval, once per interval.
 */
async function progress(c: AppStep, message: string, reason?: 'Paused'): Promise<void> {
  const { run, ap } = c;
  const key = progressKey(c);
  const now = run.now().getTime();
  // Pausing (a canary step waiting for promotion) and resuming are state changes: shown at once.
  if ((ap.reason === 'Paused') !== (reason === 'Paused')) {
    ap.reason = reason;
    ap.message = message;
    progressWrittenAt.set(key, now);
    await run.journal.save();
    return;
  }
  if (ap.message === message) return;
  ap.message = message;
  const last = progressWrittenAt.get(key);
  // The first progress is carried by the app's next write; later ones alone at most every interval.
  if (last === undefined) progressWrittenAt.set(key, now);
  if (last === undefined || now - last < PROGRESS_WRITE_INTERVAL_MS) return;
  progressWrittenAt.set(key, now);
  await run.journal.save();
}

/** Records the app's end (Succeeded or Failed) and announces it. */
async function finish(
  c: AppStep,
  phase: 'Succeeded' | 'Failed',
  reason: string | undefined,
  message: string,
): Promise<undefined> {
  const { run, ap } = c;
  const { plan } = run;
  ap.phase = phase;
  ap.reason = reason;
  ap.message = message;
  ap.finishedAt = iso(run.now());
  progressWrittenAt.delete(progressKey(c));
  await run.journal.save();
  if (ap.phase === 'Succeeded') {
    const where = c.cluster ? `${plan.spec.to} cluster ${c.cluster}` : plan.spec.to;
    run.announce.event('Normal', 'AppPromoted', `${ap.application} runs ${ap.targetTag} in ${where}`);
    // A fleet announces its waves; one notification per app and cluster would drown the channel.
    if (!c.cluster)
      run.announce.notify('AppPromoted', { application: ap.application, tag: ap.targetTag, digest: ap.digest });
  } else {
    run.announce.appFailed(ap, c.cluster);
    if (ap.verification && VERIFICATION_FAILURE_REASONS.has(ap.reason ?? ''))
      run.announce.notify('VerificationFailed', {
        application: ap.application,
        tag: ap.targetTag,
        digest: ap.digest,
        message: `${ap.message} (onFailure: ${ap.verification.onFailure ?? 'stop'})`,
      });
  }
  return undefined;
}
