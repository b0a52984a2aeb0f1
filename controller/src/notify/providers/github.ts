import type { GitHubTarget } from '@kpromo/api';
import type { ReleaseEvent } from '../../extension/notificationProvider.js';
import type { GuardedResponse } from '../../net/guardedFetch.js';
import { redactUrl } from '../../net/redactUrl.js';
import { summarizeEvent, truncate } from '../eventText.js';
import type { DeliveryOutcome } from '../retryingRequest.js';
import { jsonBody, retryAfterMs, safeProviderText, statusVerdict, type Verdict } from '../retryingRequest.js';
import type { NotificationTarget } from './types.js';

/**
 * GitHub commit statuses (https://docs.github.com/en/rest/commits/statuses#create-a-commit-status)
 * on the commit an image was built from, as its OCI labels say
 * (https://github.com/opencontainers/image-spec/blob/main/annotations.md): `source` is the repository
 * URL, `revision` the commit. One status context per environment: kpromo/<environment>.
 */

export const GITHUB_API_URL = 'https://api.github.com';
export const SOURCE_LABEL = 'org.opencontainers.image.source';
export const REVISION_LABEL = 'org.opencontainers.image.revision';
/** GitHub refuses longer descriptions. */
export const MAX_DESCRIPTION = 140;

export type CommitState = 'pending' | 'success' | 'failure' | 'error';

/** Pure: the state an event sets; undefined for plan events, whose apps have their own statuses. */
export function commitState(type: ReleaseEvent['type']): CommitState | undefined {
  switch (type) {
    case 'PlanApproved':
    case 'PlanWaiting':
      return 'pending';
    case 'AppPromoted':
      return 'success';
    case 'AppFailed':
      return 'failure';
    default:
      return undefined;
  }
}

export interface SourceCommit {
  owner: string;
  repo: string;
  sha: string;
}

const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const REPO = /^[A-Za-z0-9._-]{1,100}$/;
const SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** The web host of an API base: api.github.com is github.com; a GHES API (https://ghe/api/v3) is on its own host. */
export function webHostOf(apiURL: string): string {
  const host = new URL(apiURL).host.toLowerCase();
  return host === 'api.github.com' ? 'github.com' : host;
}

/**
 * Pure: the commit the labels name, or why there is none. Labels are written by whoever built the
 * image, so everything is checked: the source must be a repository URL on `webHost`, the revision a
 * full commit SHA (both end up in an API path).
 */
export function sourceCommit(labels: Record<string, string>, webHost: string): SourceCommit | { skip: string } {
  const source = labels[SOURCE_LABEL]?.trim();
  const revision = labels[REVISION_LABEL]?.trim().toLowerCase();
  if (!source || !revision) return { skip: `image has no ${SOURCE_LABEL} and ${REVISION_LABEL} labels` };
  if (!SHA.test(revision)) return { skip: `${REVISION_LABEL} is not a full commit SHA` };
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    return { skip: `${SOURCE_LABEL} is not a URL` };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { skip: `${SOURCE_LABEL} is not an http(s) URL` };
  if (url.host.toLowerCase() !== webHost)
    return { skip: `${SOURCE_LABEL} is on ${url.host}, not on this GitHub (${webHost})` };
  const [owner, rawRepo] = url.pathname.split('/').filter(Boolean);
  const repo = rawRepo?.replace(/\.git$/, '');
  if (!owner || !repo || !OWNER.test(owner) || !REPO.test(repo) || repo === '.' || repo === '..')
    return { skip: `${SOURCE_LABEL} does not name a repository (https://${webHost}/<owner>/<repo>)` };
  return { owner, repo, sha: revision };
}

/** Pure: owner/repo matches one of `patterns` (owner/name or owner/*; GitHub names are case-insensitive). */
export function repositoryAllowed(owner: string, repo: string, patterns: readonly string[]): boolean {
  const o = owner.toLowerCase();
  const r = repo.toLowerCase();
  return patterns.some((p) => {
    const [po, pr] = p.toLowerCase().split('/');
    return po === o && (pr === '*' || pr === r);
  });
}

export interface CommitStatus {
  state: CommitState;
  description: string;
  context: string;
  target_url?: string;
}

/** Pure: the status body; targetURL placeholders are URL-encoded. */
export function commitStatus(
  e: ReleaseEvent,
  state: CommitState,
  o: { targetURL?: string; application?: string } = {},
): CommitStatus {
  const s = summarizeEvent(e);
  const values: Record<string, string> = {
    namespace: e.namespace,
    plan: e.plan,
    application: o.application ?? e.application ?? '',
    environment: e.to,
  };
  const target = o.targetURL?.replace(/\{(namespace|plan|application|environment)\}/g, (_, k: string) =>
    encodeURIComponent(values[k]),
  );
  return {
    state,
    description: truncate(`${s.headline}${s.message ? `: ${s.message}` : ''}`, MAX_DESCRIPTION),
    context: `kpromo/${e.to}`,
    ...(target ? { target_url: target } : {}),
  };
}

/**
 * Reads a GitHub answer. Rate limits (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api)
 * come as 403 or 429 with Retry-After, or with x-ratelimit-remaining 0 until x-ratelimit-reset: both wait.
 */
export function githubVerdict(res: GuardedResponse, shown: string, now = Date.now()): Verdict<GuardedResponse> {
  const message = safeProviderText(jsonBody<{ message?: unknown }>(res)?.message);
  const v = statusVerdict(res, shown, message);
  if (v.ok || (res.status !== 403 && res.status !== 429)) return v;
  const after = retryAfterMs(res.header('retry-after'), now);
  if (after !== undefined) return { ...v, retry: true, retryAfterMs: after };
  const reset = Number(res.header('x-ratelimit-reset'));
  if (res.header('x-ratelimit-remaining') === '0' && Number.isFinite(reset))
    return { ...v, retry: true, retryAfterMs: Math.max(0, reset * 1000 - now) };
  return v;
}

const apiBase = (spec: GitHubTarget) => (spec.apiURL ?? GITHUB_API_URL).replace(/\/+$/, '');

export const githubTarget: NotificationTarget<GitHubTarget> = {
  kind: 'github',
  problem: (spec) =>
    spec.repositories?.length ? undefined : 'spec.github.repositories must name at least one repository',
  async deliver(spec, ctx) {
    const e = ctx.event;
    const state = commitState(e.type);
    if (!state) return { ok: true, attempts: 0, skipped: `${e.type} sets no commit status` };
    if (!ctx.commits) return { ok: true, attempts: 0, skipped: 'image labels cannot be read here' };
    const base = apiBase(spec);
    const token = await ctx.secrets.token(
      spec.tokenSecretRef,
      'spec.github.tokenSecretRef',
      base,
      'spec.github.apiURL',
    );
    const host = webHostOf(base);
    const outcomes: DeliveryOutcome[] = [];
    const skipped: string[] = [];
    for (const img of await ctx.commits.images(e)) {
      const what = `${img.application}@${img.digest}`;
      if (!img.labels) {
        outcomes.push({ ok: false, attempts: 0, error: `cannot read the labels of ${what}: ${img.error}` });
        continue;
      }
      const c = sourceCommit(img.labels, host);
      const skip =
        'skip' in c
          ? c.skip
          : repositoryAllowed(c.owner, c.repo, spec.repositories)
            ? undefined
            : `${c.owner}/${c.repo} is not in spec.github.repositories`;
      if (skip || 'skip' in c) {
        ctx.log?.debug({ application: img.application, digest: img.digest, reason: skip }, 'no commit status');
        skipped.push(`${img.application}: ${skip}`);
        continue;
      }
      const path = `/repos/${c.owner}/${c.repo}/statuses/${c.sha}`;
      const shown = `${redactUrl(base)}${path}`;
      const { value: _, ...outcome } = await ctx.request({
        url: `${base}${path}`,
        shown,
        body: JSON.stringify(commitStatus(e, state, { targetURL: spec.targetURL, application: img.application })),
        headers: () => ({
          accept: 'application/vnd.github+json',
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'user-agent': 'kpromo-controller',
          'x-github-api-version': '2022-11-28',
        }),
        maxBodyBytes: 16 * 1024,
        judge: (r) => githubVerdict(r, shown),
      });
      outcomes.push(outcome);
    }
    if (!outcomes.length) return { ok: true, attempts: 0, skipped: skipped.join('; ') || 'no image in this event' };
    const failed = outcomes.filter((o) => !o.ok);
    return {
      ok: failed.length === 0,
      attempts: Math.max(...outcomes.map((o) => o.attempts)),
      status: failed[0]?.status ?? outcomes[0].status,
      ...(failed.length ? { error: failed.map((o) => o.error).join('; ') } : {}),
    };
  },
};
