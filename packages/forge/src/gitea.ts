import { z } from 'zod';
import {
  type BranchProtection,
  type CommitStatus,
  type Forge,
  ForgeError,
  type OpenPullRequest,
  type PullRequest,
  type RepoRef,
  type Review,
  type ReviewState,
} from './forge.js';

export interface GiteaForgeOptions {
  /** Gitea's own URL (`https://gitea.example.com`, or with a sub-path); the API is `${baseUrl}/api/v1`. */
  baseUrl: string;
  /** An access token of the user kpromo acts as (scopes write:repository, write:issue, read:user). */
  token: string;
  /** Per request; default 30 s. */
  timeoutMs?: number;
  /** Waits between merge attempts while Gitea still checks the pull request's mergeability. */
  mergeRetryDelaysMs?: readonly number[];
}

// What the adapter relies on of Gitea's answers (modules/structs in Gitea); other fields pass through.
const user = z.object({ login: z.string() });
const branchInfo = z.object({ ref: z.string(), sha: z.string(), repo_id: z.number() });
const pullSchema = z.object({
  number: z.number().int(),
  html_url: z.string(),
  state: z.enum(['open', 'closed']),
  merged: z.boolean(),
  merged_at: z.string().nullish(),
  merge_commit_sha: z.string().nullish(),
  merged_by: user.nullish(),
  title: z.string(),
  body: z.string().nullish(),
  user: user.nullish(),
  head: branchInfo,
  base: branchInfo,
});
const reviewSchema = z.object({
  id: z.number().int(),
  user: user.nullish(),
  state: z.string(),
  commit_id: z.string(),
  submitted_at: z.string().nullish(),
  stale: z.boolean(),
  dismissed: z.boolean(),
});
// GET /repos/{o}/{r}/branches/{b} (structs.Branch): Gitea's own choice of the rule that applies.
const branchSchema = z.object({
  protected: z.boolean(),
  required_approvals: z.number().int(),
  enable_status_check: z.boolean(),
  status_check_contexts: z.array(z.string()).nullish(),
  /** Only told to repository admins. */
  effective_branch_protection_name: z.string().nullish(),
});
const protectionSchema = z.object({ rule_name: z.string(), dismiss_stale_approvals: z.boolean() });
const PAGE = 50; // Gitea's default [api] MAX_RESPONSE_ITEMS: a larger limit is cut to it.
const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
// GitHub's limit, so a status reads the same on both forges (Gitea stores any length).
const STATUS_DESCRIPTION_MAX = 140;

/** Gitea's review states; REQUEST_REVIEW (a request, not a review) is left out of the list. */
const REVIEW_STATES: Record<string, ReviewState> = {
  APPROVED: 'APPROVED',
  REQUEST_CHANGES: 'CHANGES_REQUESTED',
  COMMENT: 'COMMENTED',
  PENDING: 'PENDING',
};

type Pull = z.infer<typeof pullSchema>;

const toPullRequest = (p: Pull): PullRequest => ({
  number: p.number,
  url: p.html_url,
  state: p.merged ? 'merged' : p.state,
  head: { branch: p.head.ref, sha: p.head.sha },
  base: { branch: p.base.ref },
  title: p.title,
  body: p.body ?? '',
  author: p.user?.login ?? '',
  ...(p.merged
    ? { merged: { by: p.merged_by?.login ?? '', commit: p.merge_commit_sha ?? '', at: p.merged_at ?? '' } }
    : {}),
});

function toReview(r: z.infer<typeof reviewSchema>): Review | undefined {
  if (!r.user || r.state === 'REQUEST_REVIEW' || r.state === '') return undefined;
  return {
    id: r.id,
    user: r.user.login,
    // A state this adapter does not know never counts as an approval.
    state: r.dismissed ? 'DISMISSED' : (REVIEW_STATES[r.state] ?? 'COMMENTED'),
    commit: r.commit_id,
    // Gitea answers the zero time for a review not submitted yet.
    ...(r.submitted_at && !r.submitted_at.startsWith('0001-') ? { submittedAt: r.submitted_at } : {}),
    ...(r.stale || r.dismissed ? { stale: true } : {}),
  };
}

/** One path segment: encoded, and never one that walks out of the API (`.`, `..`, empty). */
function seg(what: string, value: string | number): string {
  const s = String(value);
  if (s === '' || s === '.' || s === '..')
    throw new ForgeError(`gitea ${what}: invalid path segment ${JSON.stringify(s)}`);
  return encodeURIComponent(s);
}

/** A call to Gitea's API: the answer checked against `schema` (none: the answer is not read). */
type Call = <T>(
  what: string,
  method: string,
  path: string,
  schema: z.ZodType<T> | undefined,
  body?: unknown,
) => Promise<T>;

/** `${baseUrl}/api/v1`, once baseUrl is a plain http(s) URL. */
function apiRootOf(baseUrl: string): string {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new ForgeError(`gitea: baseUrl ${JSON.stringify(baseUrl)} is not a URL`);
  }
  if (!['http:', 'https:'].includes(base.protocol) || base.username || base.password || base.search || base.hash)
    throw new ForgeError(
      `gitea: baseUrl ${JSON.stringify(baseUrl)} must be an http(s) URL without credentials, query or fragment`,
    );
  return `${base.origin}${base.pathname.replace(/\/+$/, '')}/api/v1`;
}

/** The only way requests reach Gitea: under `apiRoot`, with the token, no redirect followed. */
function giteaCall(apiRoot: string, token: string, timeoutMs: number): Call {
  return async <T>(
    what: string,
    method: string,
    path: string,
    schema: z.ZodType<T> | undefined,
    body?: unknown,
  ): Promise<T> => {
    const url = `${apiRoot}${path}`;
    if (!new URL(url).href.startsWith(`${apiRoot}/`))
      throw new ForgeError(`gitea ${what}: ${url} is outside ${apiRoot}`);
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        redirect: 'manual',
        headers: {
          authorization: `token ${token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (e) {
      throw new ForgeError(`gitea ${what}: ${method} ${url} failed: ${(e as Error).message}`);
    }
    const text = await res.text().catch(() => '');
    if (res.status >= 300 && res.status < 400)
      throw new ForgeError(
        `gitea ${what}: ${method} ${url} answered a redirect (${res.status} to ${res.headers.get('location') ?? '?'}), not followed; check baseUrl`,
        res.status,
      );
    if (!res.ok) {
      let message = text.trim().slice(0, 500);
      try {
        const j = JSON.parse(text) as { message?: unknown; errors?: unknown };
        if (typeof j.message === 'string' && j.message) message = j.message;
        if (Array.isArray(j.errors) && j.errors.length) message += ` (${j.errors.join('; ')})`;
      } catch {}
      throw new ForgeError(`gitea ${what}: ${res.status} ${message || res.statusText}`, res.status);
    }
    if (!schema) return undefined as T;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ForgeError(`gitea ${what}: the answer is not JSON: ${text.slice(0, 200)}`, res.status);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new ForgeError(
        `gitea ${what}: unexpected answer: ${parsed.error.issues
          .slice(0, 3)
          .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
          .join('; ')}`,
        res.status,
      );
    return parsed.data;
  };
}

const repoPath = (what: string, r: RepoRef) => `/repos/${seg(what, r.owner)}/${seg(what, r.name)}`;
const name = (r: RepoRef, n?: number) => `${r.owner}/${r.name}${n === undefined ? '' : `#${n}`}`;

async function findOpen(call: Call, repo: RepoRef, head: string, baseBranch: string): Promise<Pull | undefined> {
  const what = `finding the open pull request ${head} → ${baseBranch} in ${name(repo)}`;
  for (let page = 1; ; page++) {
    const q = new URLSearchParams({
      state: 'open',
      base_branch: baseBranch,
      page: String(page),
      limit: String(PAGE),
    });
    const pulls = await call(what, 'GET', `${repoPath(what, repo)}/pulls?${q}`, z.array(pullSchema));
    // Same-repository pull requests only: a fork's branch of the same name is not kpromo's.
    const found = pulls.find(
      (p) => p.head.ref === head && p.base.ref === baseBranch && p.head.repo_id === p.base.repo_id,
    );
    if (found || pulls.length < PAGE) return found;
  }
}

async function updateIfChanged(call: Call, repo: RepoRef, p: Pull, want: OpenPullRequest): Promise<Pull> {
  if (p.title === want.title && (p.body ?? '') === want.body) return p;
  const what = `updating pull request ${name(repo, p.number)}`;
  return call(what, 'PATCH', `${repoPath(what, repo)}/pulls/${p.number}`, pullSchema, {
    title: want.title,
    body: want.body,
  });
}

async function ensurePullRequest(call: Call, repo: RepoRef, pr: OpenPullRequest): Promise<PullRequest> {
  const existing = await findOpen(call, repo, pr.head, pr.base);
  if (existing) return toPullRequest(await updateIfChanged(call, repo, existing, pr));
  const what = `opening a pull request ${pr.head} → ${pr.base} in ${name(repo)}`;
  try {
    return toPullRequest(
      await call(what, 'POST', `${repoPath(what, repo)}/pulls`, pullSchema, {
        head: pr.head,
        base: pr.base,
        title: pr.title,
        body: pr.body,
      }),
    );
  } catch (e) {
    // Opened meanwhile (another leader): Gitea answers 409; take that one.
    if (!(e instanceof ForgeError && e.status === 409)) throw e;
    const raced = await findOpen(call, repo, pr.head, pr.base);
    if (!raced) throw e;
    return toPullRequest(await updateIfChanged(call, repo, raced, pr));
  }
}

async function getPullRequest(call: Call, repo: RepoRef, number: number): Promise<PullRequest> {
  const what = `reading pull request ${name(repo, number)}`;
  return toPullRequest(await call(what, 'GET', `${repoPath(what, repo)}/pulls/${seg(what, number)}`, pullSchema));
}

async function listReviews(call: Call, repo: RepoRef, number: number): Promise<Review[]> {
  const what = `listing the reviews of ${name(repo, number)}`;
  const all: z.infer<typeof reviewSchema>[] = [];
  for (let page = 1; ; page++) {
    const q = new URLSearchParams({ page: String(page), limit: String(PAGE) });
    const reviews = await call(
      what,
      'GET',
      `${repoPath(what, repo)}/pulls/${seg(what, number)}/reviews?${q}`,
      z.array(reviewSchema),
    );
    all.push(...reviews);
    if (reviews.length < PAGE) break;
  }
  return all
    .sort((a, b) => a.id - b.id)
    .map(toReview)
    .filter((r): r is Review => r !== undefined);
}

async function setStatus(call: Call, repo: RepoRef, sha: string, status: CommitStatus): Promise<void> {
  const what = `setting status ${status.context} on ${sha} in ${name(repo)}`;
  if (!SHA.test(sha)) throw new ForgeError(`gitea ${what}: not a commit id`);
  const line = status.description.split(/\r?\n/)[0] ?? '';
  await call(what, 'POST', `${repoPath(what, repo)}/statuses/${sha}`, z.unknown(), {
    context: status.context,
    state: status.state,
    description: line.length > STATUS_DESCRIPTION_MAX ? `${line.slice(0, STATUS_DESCRIPTION_MAX - 1)}…` : line,
    ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
  });
}

async function merge(
  call: Call,
  retryDelaysMs: readonly number[],
  repo: RepoRef,
  number: number,
  m: { sha: string; title: string; message: string },
): Promise<{ commit: string }> {
  const what = `merging ${name(repo, number)} at ${m.sha}`;
  if (!SHA.test(m.sha)) throw new ForgeError(`gitea ${what}: not a commit id`);
  const path = `${repoPath(what, repo)}/pulls/${seg(what, number)}/merge`;
  const body = {
    Do: 'merge',
    MergeTitleField: m.title,
    MergeMessageField: m.message,
    // Gitea refuses (409 "head out of date") when the head moved past the approved commit.
    head_commit_id: m.sha,
    delete_branch_after_merge: false,
  };
  for (let attempt = 0; ; attempt++) {
    try {
      await call(what, 'POST', path, undefined, body);
      break;
    } catch (e) {
      // 405 "Please try again later": Gitea is still checking whether the pull request merges
      // (right after it was opened or its head moved). Every other refusal is final.
      const checking = e instanceof ForgeError && e.status === 405 && /try again later/i.test(e.message);
      if (!checking || attempt >= retryDelaysMs.length) throw e;
      await new Promise((r) => setTimeout(r, retryDelaysMs[attempt]));
    }
  }
  const merged = await getPullRequest(call, repo, number);
  if (!merged.merged?.commit)
    throw new ForgeError(`gitea ${what}: Gitea accepted the merge but ${name(repo, number)} shows no merge commit`);
  return { commit: merged.merged.commit };
}

async function close(call: Call, repo: RepoRef, number: number): Promise<void> {
  const what = `closing ${name(repo, number)}`;
  await call(what, 'PATCH', `${repoPath(what, repo)}/pulls/${seg(what, number)}`, pullSchema, { state: 'closed' });
}

async function branchProtection(call: Call, repo: RepoRef, branch: string): Promise<BranchProtection | undefined> {
  const what = `reading branch ${branch} of ${name(repo)}`;
  // The branch says which rule Gitea applies (rule names are globs, matched by Gitea, not here)
  // and is readable by anyone who may read the code; a slash in the name stays a path separator.
  const b = await call(
    what,
    'GET',
    `${repoPath(what, repo)}/branches/${branch
      .split('/')
      .map((s) => seg(what, s))
      .join('/')}`,
    branchSchema,
  );
  if (!b.protected) return undefined;
  const p: BranchProtection = {
    requiredApprovals: b.required_approvals,
    requiredStatusContexts: b.enable_status_check ? (b.status_check_contexts ?? []) : [],
  };
  const rule = b.effective_branch_protection_name;
  if (!rule) return p; // not a repository admin: the rule's other settings are not shown
  const ruleWhat = `reading branch protection rule ${rule} of ${name(repo)}`;
  const r = await call(
    ruleWhat,
    'GET',
    `${repoPath(ruleWhat, repo)}/branch_protections/${seg(ruleWhat, rule)}`,
    protectionSchema,
  );
  return { ...p, dismissesStaleApprovals: r.dismiss_stale_approvals, source: `rule ${r.rule_name}` };
}

/**
 * Forge on Gitea's REST API (/api/v1) with plain fetch: redirects are refused, not followed, and
 * every request stays under `baseUrl`. Errors are ForgeError naming the call and Gitea's message.
 */
export function createGiteaForge(o: GiteaForgeOptions): Forge {
  const call = giteaCall(apiRootOf(o.baseUrl), o.token, o.timeoutMs ?? 30_000);
  const mergeRetryDelaysMs = o.mergeRetryDelaysMs ?? [250, 500, 1000, 1000, 2000, 2000, 3000];
  return {
    kind: 'gitea',
    ensurePullRequest: (repo, pr) => ensurePullRequest(call, repo, pr),
    getPullRequest: (repo, number) => getPullRequest(call, repo, number),
    listReviews: (repo, number) => listReviews(call, repo, number),
    setStatus: (repo, sha, status) => setStatus(call, repo, sha, status),
    merge: (repo, number, m) => merge(call, mergeRetryDelaysMs, repo, number, m),
    close: (repo, number) => close(call, repo, number),
    currentUser: async () => (await call('reading the token’s user', 'GET', '/user', user)).login,
    branchProtection: (repo, branch) => branchProtection(call, repo, branch),
  };
}
