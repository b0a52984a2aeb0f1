import { isDeepStrictEqual } from 'node:util';
import type { AppProgress, PullRequestRecord } from '@kpromo/api';
import type { PullRequest } from '@kpromo/forge';
import pLimit from 'p-limit';
import { repoRef } from '../../delivery/forges.js';
import { PermanentAppError } from '../../extension/errors.js';
import type { ResolvedPlan } from '../planDecisions.js';
import { bodyApps, pullRequestBody } from '../pullRequestBody.js';
import {
  approvalSourceOf,
  forgeUser,
  judgeReviews,
  kpromoMerges,
  pullRequestBranch,
  pullRequestChanged,
  pullRequestDelivery,
  pullRequestStatuses,
} from '../pullRequestDecisions.js';
import { iso } from '../time.js';
import { abandonsReconcile, classify } from './errors.js';
import { approvedCondition, evaluateGate } from './gate.js';
import type { PlanRun } from './run.js';

/**
 * Promotion through a pull request (Environment delivery.git.pullRequest): each app's change is
 * committed to the plan's own branch (appSteps write, one at a time so the last commit holds them
 * all), then this step opens the pull request with the evidence, reports kpromo's gates as commit
 * statuses, judges the reviews and merges (or, with approvalSource pullRequest, waits for a person to
 * merge). The apps' rollouts start from the merge commit. Level-triggered: every pass reads the
 * pull request again; the record in status.pullRequest is the journal.
 */

/** How often an open pull request is read again: reviews and merges arrive without a Kubernetes event. */
export const PULL_REQUEST_POLL_MS = 3_000;

const writers = new WeakMap<PlanRun, ReturnType<typeof pLimit>>();

/**
 * Runs the apps' commits to the plan's branch one at a time, recording the last as kpromo's
 * promotion commit: every push lands on top of the one before, so the last holds every change.
 */
export async function writeToPullRequestBranch<T extends { commit?: string } | undefined>(
  run: PlanRun,
  r: ResolvedPlan,
  write: (branch: { name: string; from: string; head?: string }) => Promise<T>,
): Promise<T> {
  const limit = writers.get(run) ?? pLimit(1);
  writers.set(run, limit);
  return limit(async () => {
    const rec = record(run, r);
    const res = await write({ name: rec.branch, from: rec.base, ...(rec.commit ? { head: rec.commit } : {}) });
    if (res?.commit) {
      rec.commit = res.commit;
      // Stored before the next app builds on it: a new leader finds the branch where the journal says.
      await run.journal.save();
    }
    return res;
  });
}

function record(run: PlanRun, r: ResolvedPlan): PullRequestRecord {
  const pr = pullRequestDelivery(r.toEnv)!;
  run.status.pullRequest ??= {
    forge: pr.forge,
    repository: pr.repository,
    branch: pullRequestBranch(run.plan),
    base: r.toEnv.spec.delivery.git?.branch ?? 'main',
  };
  return run.status.pullRequest;
}

/** Before the merge an app in RollingOut waits for it; after, its rollout counts from the merge commit. */
export function mergeOf(run: PlanRun, r: ResolvedPlan): { commit: string; at: Date } | { waiting: string } | undefined {
  if (!pullRequestDelivery(r.toEnv)) return undefined;
  const rec = run.status.pullRequest;
  if (rec?.merged) return { commit: rec.merged.commit, at: new Date(rec.merged.at ?? run.now()) };
  return {
    waiting: rec?.number
      ? `waiting for pull request #${rec.number} (${rec.url ?? rec.repository}) to be merged: ${rec.message ?? ''}`.trim()
      : 'waiting for the pull request to be opened (once every application is committed to its branch)',
  };
}

/** Apps still to be committed to the branch: the pull request waits for them. */
const STILL_WRITING = new Set(['Pending', 'Copying', 'Writing']);

/**
 * The plan-level step after the apps' pass: open or update the pull request, report statuses,
 * judge reviews and the merge, merge when kpromo merges. Returns when to look again.
 */
export async function advancePullRequest(run: PlanRun, r: ResolvedPlan): Promise<number | undefined> {
  try {
    return await pullRequestPass(run, r);
  } catch (e) {
    if (abandonsReconcile(e, run.signal)) throw e;
    const c = classify(e);
    const rec = run.status.pullRequest!;
    if (c.permanent) {
      failWritten(run, run.status.apps ?? [], c.reason, `pull request: ${c.message}`);
      rec.message = c.message;
    } else rec.message = `the forge did not answer as expected, retrying: ${c.message}`;
    await run.journal.save();
    return c.permanent ? 0 : 10_000;
  }
}

async function pullRequestPass(run: PlanRun, r: ResolvedPlan): Promise<number | undefined> {
  const pr = pullRequestDelivery(r.toEnv);
  if (!pr) return undefined;
  const { status, deps } = run;
  const apps = status.apps ?? [];
  const rec = status.pullRequest;
  if (!rec?.commit || rec.state === 'merged' || rec.state === 'closed') return undefined;
  if (apps.some((a) => STILL_WRITING.has(a.phase))) return undefined;
  if (!deps.forgeFor)
    throw new PermanentAppError('InvalidEnvironment', 'this controller has no forge access configured');
  const forge = await deps.forgeFor(r.toEnv);
  const repo = repoRef(pr.repository);
  const self = await forge.currentUser();
  const written = apps.filter((a) => a.written);
  const before = structuredClone(rec);
  const gateBefore = structuredClone(status.gate);
  const source = approvalSourceOf(r.flow, run.plan.spec.to, r.toEnv);

  const cause = causeOf(run);
  // Open (or find) it with the evidence as it stands; a later pass rewrites the body as approvals arrive.
  const body = () =>
    pullRequestBody({
      plan: run.plan,
      apps: bodyApps(run.plan, written, (app, digest) => sourceVerification(run, app, digest)),
      gate: status.gate,
      source,
      ...(deps.planURL ? { planURL: planURL(deps.planURL, run) } : {}),
      ...(cause ? { cause } : {}),
    });
  deps.fence?.(run.namespace);
  let p: PullRequest = rec.number
    ? await forge.getPullRequest(repo, rec.number)
    : await forge.ensurePullRequest(repo, { head: rec.branch, base: rec.base, title: title(run), body: body() });
  if (!rec.number) {
    rec.number = p.number;
    rec.url = p.url;
    run.announce.event('Normal', 'PullRequestOpened', `pull request #${p.number} ${p.url} into ${rec.base}`);
  }
  rec.state = p.state;
  rec.head = p.head.sha;
  if (p.merged) rec.merged = { by: p.merged.by, commit: p.merged.commit, at: p.merged.at || iso(run.now()) };

  // Reviews (and the merge) as approvals: on kpromo's commit only, by someone RBAC lets approve.
  const changed = pullRequestChanged({ commit: rec.commit, head: p.head.sha, base: p.base.branch, wantBase: rec.base });
  const judged = judgeReviews(await forge.listReviews(repo, p.number), {
    commit: rec.commit,
    head: p.head.sha,
    ...(changed ? { changed } : {}),
    self,
    user: (login) => forgeUser(pr, login),
    ...(p.merged ? { merged: { by: p.merged.by, commit: p.merged.commit } } : {}),
  });
  for (const j of judged) {
    if (!j.eligible) continue;
    if (!(await deps.mayApprove?.(j.user, run.namespace, run.plan.spec.to))) {
      j.eligible = false;
      j.why = `${j.user} may not approve plans into ${run.plan.spec.to} (Kubernetes RBAC: verb approve on environments/${run.plan.spec.to} or on promotionplans in ${run.namespace})`;
    }
  }
  rec.reviews = judged.slice(0, 100);
  const g = evaluateGate(run);
  status.gate = g.gate;
  rec.message = changed
    ? `${changed}; no review counts and kpromo does not merge until it is kpromo's proposal again (or create a new plan)`
    : g.gate.approved
      ? g.hold
        ? `approved; held: ${g.hold.message}`
        : 'approved'
      : `waiting for ${g.gate.waitingFor ?? 'approval'}`;

  let requeue: number | undefined = PULL_REQUEST_POLL_MS;
  if (p.state === 'open') {
    if (!changed) {
      await report(run, forge, repo, rec.commit, g);
      const now = body();
      if (p.body !== now)
        await forge.ensurePullRequest(repo, { head: rec.branch, base: rec.base, title: title(run), body: now });
    }
    if (!changed && g.gate.approved && !g.hold && kpromoMerges(source, g.gate)) {
      deps.fence?.(run.namespace);
      const m = await forge.merge(repo, p.number, {
        sha: rec.commit,
        title: title(run),
        message: `PromotionPlan ${run.namespace}/${run.name}`,
      });
      p = await forge.getPullRequest(repo, p.number);
      rec.state = p.state;
      rec.merged = {
        by: p.merged?.by ?? self,
        commit: p.merged?.commit ?? m.commit,
        at: p.merged?.at || iso(run.now()),
      };
      run.announce.event(
        'Normal',
        'PullRequestMerged',
        `kpromo merged pull request #${p.number} (${m.commit.slice(0, 12)})`,
      );
      requeue = 0;
    }
  } else if (p.state === 'merged') {
    requeue = 0;
    if (!g.gate.approved) {
      // Merged on the forge without the stage's approvals (branch protection did not require
      // kpromo/approval): what runs was not approved; the apps fail and the stage's failure handling applies.
      failWritten(
        run,
        written,
        'MergedWithoutApproval',
        `pull request #${p.number} was merged by ${p.merged?.by ?? 'someone'} without the stage's approvals (${g.gate.waitingFor ?? 'not approved'}); revert the merge ${p.merged?.commit.slice(0, 12) ?? ''} and require the kpromo/approval status in the branch protection of ${rec.base}`,
      );
    } else run.announce.event('Normal', 'PullRequestMerged', `pull request #${p.number} merged by ${p.merged?.by}`);
  } else {
    requeue = 0;
    failWritten(
      run,
      written,
      'PullRequestClosed',
      `pull request #${p.number} was closed without being merged: nothing was delivered`,
    );
  }
  if (!isDeepStrictEqual(before, rec) || !isDeepStrictEqual(gateBefore, g.gate)) {
    approvedCondition(run, g.gate);
    await run.journal.save();
  }
  return requeue;
}

async function report(
  run: PlanRun,
  forge: Awaited<ReturnType<NonNullable<PlanRun['deps']['forgeFor']>>>,
  repo: ReturnType<typeof repoRef>,
  sha: string,
  g: ReturnType<typeof evaluateGate>,
): Promise<void> {
  const sigs = (run.status.apps ?? []).map((a) => ({
    application: a.application,
    ...(a.signature ? { verdict: a.signature.verdict, mode: a.signature.mode } : {}),
  }));
  const statuses = pullRequestStatuses(
    g.gate,
    g.hold,
    sigs,
    run.deps.planURL ? planURL(run.deps.planURL, run) : undefined,
    run.plan.spec.action === 'rollback'
      ? undefined
      : (run.status.apps ?? []).map((a) => ({
          application: a.application,
          verdict: sourceVerification(run, a.application, a.digest)?.verdict,
        })),
  );
  // Sent when they change, not at every poll: a forge rate-limits its API (a new leader sends them once).
  const key = `${run.namespace}/${run.name}@${sha}`;
  const sent = JSON.stringify(statuses);
  if (reported.get(key) === sent) return;
  for (const s of statuses) await forge.setStatus(repo, sha, s);
  reported.delete(key);
  if (reported.size >= 1_000) reported.delete(reported.keys().next().value as string);
  reported.set(key, sent);
}

/** The statuses last sent per plan and commit (bounded, oldest out first). */
const reported = new Map<string, string>();

function failWritten(run: PlanRun, written: readonly AppProgress[], reason: string, message: string): void {
  for (const ap of written) {
    if (ap.phase !== 'RollingOut') continue;
    ap.phase = 'Failed';
    ap.reason = reason;
    ap.message = message;
    ap.finishedAt = iso(run.now());
    run.announce.appFailed(ap);
  }
}

const title = (run: PlanRun) =>
  `${run.plan.spec.action === 'rollback' ? 'Roll back' : 'Promote'} ${(run.status.apps ?? []).length} application(s) into ${run.plan.spec.to} (${run.namespace}/${run.name})`;

const planURL = (template: string, run: PlanRun) =>
  template
    .replaceAll('{namespace}', encodeURIComponent(run.namespace))
    .replaceAll('{name}', encodeURIComponent(run.name));

/** The verification that passed for `digest` of `application` in the source stage (the latest plan that promoted it there). */
function sourceVerification(run: PlanRun, application: string, digest: string | undefined) {
  let best: { at: number; v: NonNullable<AppProgress['verification']> } | undefined;
  for (const p of run.deps.cache.plans(run.namespace)) {
    if (p.spec.to !== run.plan.spec.from || p.spec.action === 'rollback') continue;
    const ap = p.status?.apps?.find((a) => a.application === application);
    const v = ap?.verification;
    if (ap?.digest !== digest || !v?.finishedAt) continue;
    const at = Date.parse(v.finishedAt);
    if (!best || at > best.at) best = { at, v };
  }
  return best?.v;
}

/** A rollback's cause: the failed check its original plan recorded when it asked for this rollback. */
function causeOf(run: PlanRun) {
  const { plan, deps, namespace } = run;
  if (!plan.spec.rollbackOf) return undefined;
  const orig = deps.cache.getPlan(namespace, plan.spec.rollbackOf);
  const a = orig?.status?.automaticRollbacks?.find((x) => x.plan === plan.metadata.name);
  return a ? { application: a.application, check: a.check, message: a.message } : undefined;
}
