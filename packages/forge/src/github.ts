import type { components, paths } from '@octokit/openapi-types';
import createClient, { type Client } from 'openapi-fetch';
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

/** The REST API version kpromo is written against (the one GitHub's published description describes). */
export const GITHUB_API_VERSION = '2022-11-28';
/** GitHub refuses longer commit status descriptions (422). */
export const GITHUB_STATUS_DESCRIPTION_MAX = 140;

export interface GitHubForgeOptions {
  /** `https://api.github.com`, or `https://<host>/api/v3` for GitHub Enterprise Server. */
  baseUrl?: string;
  /** A token with pull requests (read/write) and commit statuses (read/write) on the repositories. */
  token: string;
  /** Per call (default 30 s): a hung connection fails the call instead of the reconcile. */
  timeoutMs?: number;
  /** The fetch to call (tests); global fetch by default. */
  fetch?: (req: Request) => Promise<Response>;
}

type Pull = components['schemas']['pull-request'] | components['schemas']['pull-request-simple'];

const MAX_REVIEW_PAGES = 100;
const REVIEW_STATES = new Set<string>(['APPROVED', 'CHANGES_REQUESTED', 'COMMENTED', 'DISMISSED', 'PENDING']);

/** GitHub's message from an error body (`{message, errors[]}`), bounded. */
function githubMessage(body: unknown): string {
  const b = body && typeof body === 'object' ? (body as { message?: unknown; errors?: unknown }) : undefined;
  let m = typeof b?.message === 'string' ? b.message : typeof body === 'string' && body ? body : 'no message';
  // A 422 says "Validation Failed"; the reason is in errors[] (a message, or resource/field/code).
  if (Array.isArray(b?.errors) && b.errors.length) {
    const details = b.errors.map((e) =>
      typeof e === 'string'
        ? e
        : typeof e?.message === 'string'
          ? e.message
          : [e?.resource, e?.field, e?.code].filter((x) => typeof x === 'string').join(' '),
    );
    m = `${m}: ${details.join('; ')}`;
  }
  return m.length > 500 ? `${m.slice(0, 500)}…` : m;
}

/** `text` cut to `max` characters (code points), the last one an ellipsis when cut. */
function cut(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

function checkBaseUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ForgeError(`GitHub baseUrl ${JSON.stringify(raw)} is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new ForgeError(`GitHub baseUrl must be http(s), got ${JSON.stringify(u.protocol)}`);
  if (u.username || u.password || u.search || u.hash)
    throw new ForgeError('GitHub baseUrl must not carry credentials, a query or a fragment');
  return u;
}

function reviewState(s: string): ReviewState {
  // GitHub documents these five; anything else must not count as an approval.
  return (REVIEW_STATES.has(s) ? s : 'COMMENTED') as ReviewState;
}

/** The typed client, and `ok`: the data of a call that succeeded, or a ForgeError naming the call. */
interface GitHub {
  api: Client<paths>;
  ok<T>(r: { data?: T; error?: unknown; response: Response }, what: string): NonNullable<T>;
}

/**
 * Typed calls (openapi-fetch over `@octokit/openapi-types`) over a fetch that sends requests only
 * under `baseUrl`, follows no redirect (a 301 for a renamed repository is an error, so the token
 * never goes to a place nobody configured), and sends the token, the API version and GitHub's media type.
 */
function githubClient(o: GitHubForgeOptions): GitHub {
  const base = checkBaseUrl(o.baseUrl ?? 'https://api.github.com');
  const basePath = base.pathname.replace(/\/?$/, '/');
  if (!o.token) throw new ForgeError('GitHub token is empty: set the forge token secret');
  const doFetch = o.fetch ?? ((r: Request) => fetch(r));
  const timeoutMs = o.timeoutMs ?? 30_000;

  async function send(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const where = `GitHub ${req.method} ${url.pathname}`;
    if (url.origin !== base.origin || !`${url.pathname}/`.startsWith(basePath))
      throw new ForgeError(`${where}: refused, ${url.origin} is not the configured GitHub API`);
    const r = new Request(req, { redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    r.headers.set('authorization', `Bearer ${o.token}`);
    r.headers.set('accept', 'application/vnd.github+json');
    r.headers.set('x-github-api-version', GITHUB_API_VERSION);
    try {
      return await doFetch(r);
    } catch (e) {
      const cause = ((e as Error).cause as { code?: string } | undefined)?.code;
      throw new ForgeError(`${where} failed: ${(e as Error).message}${cause ? ` (${cause})` : ''}`);
    }
  }

  function ok<T>(r: { data?: T; error?: unknown; response: Response }, what: string): NonNullable<T> {
    const status = r.response.status;
    if (r.data != null && status >= 200 && status < 300) return r.data;
    const path = new URL(r.response.url || base.href).pathname;
    const hint =
      status >= 300 && status < 400
        ? ` (redirects are not followed: if the repository was renamed, configure its new name)`
        : status === 401
          ? ' (check the token)'
          : '';
    throw new ForgeError(`GitHub ${what} (${path}) answered ${status}: ${githubMessage(r.error)}${hint}`, status);
  }

  return { api: createClient<paths>({ baseUrl: base.href.replace(/\/$/, ''), fetch: send }), ok };
}

const repoPath = (repo: RepoRef) => ({ owner: repo.owner, repo: repo.name });

function toPullRequest(p: Pull): PullRequest {
  const merged = 'merged' in p ? p.merged : !!p.merged_at;
  const mergedBy = 'merged_by' in p ? p.merged_by?.login : undefined;
  return {
    number: p.number,
    url: p.html_url,
    state: merged ? 'merged' : p.state === 'open' ? 'open' : 'closed',
    head: { branch: p.head.ref, sha: p.head.sha },
    base: { branch: p.base.ref },
    title: p.title,
    body: p.body ?? '',
    author: p.user?.login ?? '',
    ...(merged && p.merge_commit_sha && p.merged_at
      ? { merged: { by: mergedBy ?? '', commit: p.merge_commit_sha, at: p.merged_at } }
      : {}),
  };
}

async function findOpen({ api, ok }: GitHub, repo: RepoRef, pr: OpenPullRequest): Promise<Pull | undefined> {
  const r = await api.GET('/repos/{owner}/{repo}/pulls', {
    // `head` must be `owner:branch`: GitHub ignores a bare branch name and lists every pull request.
    params: { path: repoPath(repo), query: { state: 'open', head: `${repo.owner}:${pr.head}`, base: pr.base } },
  });
  return ok(r, 'list pull requests').find((p) => p.head.ref === pr.head && p.base.ref === pr.base);
}

async function ensurePullRequest(gh: GitHub, repo: RepoRef, pr: OpenPullRequest): Promise<PullRequest> {
  const { api, ok } = gh;
  let found = await findOpen(gh, repo, pr);
  if (!found) {
    const r = await api.POST('/repos/{owner}/{repo}/pulls', {
      params: { path: repoPath(repo) },
      body: { head: pr.head, base: pr.base, title: pr.title, body: pr.body, maintainer_can_modify: false },
    });
    if (r.data) return toPullRequest(r.data);
    // Opened meanwhile (another leader, a retry): GitHub refuses a second one with 422; use that one.
    if (r.response.status === 422) found = await findOpen(gh, repo, pr);
    if (!found) return toPullRequest(ok(r, `create pull request ${pr.head} → ${pr.base}`));
  }
  if (found.title === pr.title && (found.body ?? '') === pr.body) return toPullRequest(found);
  const r = await api.PATCH('/repos/{owner}/{repo}/pulls/{pull_number}', {
    params: { path: { ...repoPath(repo), pull_number: found.number } },
    body: { title: pr.title, body: pr.body },
  });
  return toPullRequest(ok(r, `update pull request #${found.number}`));
}

async function getPullRequest({ api, ok }: GitHub, repo: RepoRef, number: number): Promise<PullRequest> {
  const r = await api.GET('/repos/{owner}/{repo}/pulls/{pull_number}', {
    params: { path: { ...repoPath(repo), pull_number: number } },
  });
  return toPullRequest(ok(r, `get pull request #${number}`));
}

async function listReviews({ api, ok }: GitHub, repo: RepoRef, number: number): Promise<Review[]> {
  const reviews: Review[] = [];
  // Every page, 100 at a time, while GitHub's Link header names a next one (bounded: a server
  // that always names one must not keep a reconcile looping).
  for (let page = 1; ; page++) {
    if (page > MAX_REVIEW_PAGES)
      throw new ForgeError(`GitHub list reviews of #${number}: more than ${MAX_REVIEW_PAGES} pages of 100`);
    const r = await api.GET('/repos/{owner}/{repo}/pulls/{pull_number}/reviews', {
      params: { path: { ...repoPath(repo), pull_number: number }, query: { per_page: 100, page } },
    });
    for (const x of ok(r, `list reviews of #${number} (page ${page})`))
      reviews.push({
        id: Number(x.id),
        user: x.user?.login ?? '',
        state: reviewState(x.state),
        commit: x.commit_id ?? '',
        ...(x.submitted_at ? { submittedAt: x.submitted_at } : {}),
        ...(x.state === 'DISMISSED' ? { stale: true } : {}),
      });
    if (!/<[^>]*>;\s*rel="next"/.test(r.response.headers.get('link') ?? '')) return reviews;
  }
}

async function setStatus({ api, ok }: GitHub, repo: RepoRef, sha: string, status: CommitStatus): Promise<void> {
  const r = await api.POST('/repos/{owner}/{repo}/statuses/{sha}', {
    params: { path: { ...repoPath(repo), sha } },
    body: {
      state: status.state,
      context: status.context,
      description: cut(status.description, GITHUB_STATUS_DESCRIPTION_MAX),
      ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
    },
  });
  ok(r, `set status ${status.context} on ${sha}`);
}

async function merge(
  { api, ok }: GitHub,
  repo: RepoRef,
  number: number,
  m: { sha: string; title: string; message: string },
): Promise<{ commit: string }> {
  const r = await api.PUT('/repos/{owner}/{repo}/pulls/{pull_number}/merge', {
    params: { path: { ...repoPath(repo), pull_number: number } },
    // `sha`: GitHub merges only if the head is still the approved commit (409 otherwise).
    body: { sha: m.sha, commit_title: m.title, commit_message: m.message, merge_method: 'merge' },
  });
  return { commit: ok(r, `merge pull request #${number}`).sha };
}

async function close({ api, ok }: GitHub, repo: RepoRef, number: number): Promise<void> {
  const r = await api.PATCH('/repos/{owner}/{repo}/pulls/{pull_number}', {
    params: { path: { ...repoPath(repo), pull_number: number } },
    body: { state: 'closed' },
  });
  ok(r, `close pull request #${number}`);
}

async function branchProtection(
  { api, ok }: GitHub,
  repo: RepoRef,
  branch: string,
): Promise<BranchProtection | undefined> {
  // Two places protect a branch on GitHub: its branch protection rule (readable only with the
  // Administration permission) and the rulesets that apply to it (readable by any reader).
  const classic = await api.GET('/repos/{owner}/{repo}/branches/{branch}/protection', {
    params: { path: { ...repoPath(repo), branch } },
  });
  const rulesets = await api.GET('/repos/{owner}/{repo}/rules/branches/{branch}', {
    params: { path: { ...repoPath(repo), branch }, query: { per_page: 100 } },
  });
  const rules = ok(rulesets, `get the rules for branch ${branch}`);
  // 404 "Branch not protected": no rule; any other 404 (no such branch or repository, or a token
  // without the Administration permission) or refusal is an error unless rulesets say enough.
  const unprotected = classic.response.status === 404 && /branch not protected/i.test(githubMessage(classic.error));
  let refused: ForgeError | undefined;
  let p: components['schemas']['branch-protection'] | undefined;
  if (!unprotected)
    try {
      p = ok(classic, `get branch protection of ${branch}`);
    } catch (e) {
      refused = e as ForgeError;
    }
  const reviews = rules.flatMap((r) => (r.type === 'pull_request' && r.parameters ? [r.parameters] : []));
  const checks = rules.flatMap((r) =>
    r.type === 'required_status_checks' && r.parameters ? r.parameters.required_status_checks : [],
  );
  if (refused && !reviews.length && !checks.length) throw refused;
  if (!p && !reviews.length && !checks.length) return undefined;
  const pr = p?.required_pull_request_reviews;
  const sc = p?.required_status_checks;
  const approvals = [
    pr?.required_approving_review_count ?? 0,
    ...reviews.map((r) => r.required_approving_review_count),
  ];
  return {
    requiredApprovals: Math.max(...approvals),
    requiredStatusContexts: [
      ...new Set([
        ...(sc?.contexts ?? []),
        ...(sc?.checks ?? []).map((c) => c.context),
        ...checks.map((c) => c.context),
      ]),
    ],
    // GitHub's rule and rulesets each dismiss on their own; without required reviews nothing is dismissed.
    ...(refused && !reviews.some((r) => r.dismiss_stale_reviews_on_push)
      ? {}
      : {
          dismissesStaleApprovals: !!pr?.dismiss_stale_reviews || reviews.some((r) => r.dismiss_stale_reviews_on_push),
        }),
    source: [p ? 'branch protection' : '', reviews.length || checks.length ? 'rulesets' : '']
      .filter(Boolean)
      .join(' and '),
    ...(refused ? { unread: `its branch protection rule (${refused.message})` } : {}),
  };
}

/** The GitHub adapter: each call through {@link githubClient}, so only under `baseUrl` and never redirected. */
export function createGitHubForge(o: GitHubForgeOptions): Forge {
  const gh = githubClient(o);
  return {
    kind: 'github',
    ensurePullRequest: (repo, pr) => ensurePullRequest(gh, repo, pr),
    getPullRequest: (repo, number) => getPullRequest(gh, repo, number),
    listReviews: (repo, number) => listReviews(gh, repo, number),
    setStatus: (repo, sha, status) => setStatus(gh, repo, sha, status),
    merge: (repo, number, m) => merge(gh, repo, number, m),
    close: (repo, number) => close(gh, repo, number),
    currentUser: async () => gh.ok(await gh.api.GET('/user'), 'get the authenticated user').login,
    branchProtection: (repo, branch) => branchProtection(gh, repo, branch),
  };
}
