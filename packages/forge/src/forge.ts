/**
 * What kpromo needs of a forge to promote through pull requests, and nothing more: open (or find) a
 * pull request, read it and its reviews, report commit statuses, merge it guarded by the head commit
 * the approvals were given on, and who the token is. Each forge is one adapter (gitea.ts, github.ts);
 * git itself (branches, commits, reverts) is done with git, not through a forge's API.
 *
 * Every value here came from the forge: callers treat logins, titles and bodies as untrusted text.
 */

/** `owner/name` on the forge. */
export interface RepoRef {
  owner: string;
  name: string;
}

export type PullRequestState = 'open' | 'closed' | 'merged';

export interface PullRequest {
  number: number;
  /** The page a person opens (html_url). */
  url: string;
  state: PullRequestState;
  /** The branch proposed, and the commit it points at now. */
  head: { branch: string; sha: string };
  /** The branch it merges into. */
  base: { branch: string };
  title: string;
  body: string;
  /** Login of whoever opened it. */
  author: string;
  /** Set once merged. */
  merged?: { by: string; commit: string; at: string };
}

export type ReviewState = 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED' | 'PENDING';

export interface Review {
  id: number;
  /** Login of the reviewer. */
  user: string;
  state: ReviewState;
  /** The commit the review was given on: an approval binds to it and to nothing after it. */
  commit: string;
  submittedAt?: string;
  /** The forge itself marked it outdated or dismissed (Gitea `stale`/`dismissed`). */
  stale?: boolean;
}

export type StatusState = 'pending' | 'success' | 'failure' | 'error';

export interface CommitStatus {
  /** e.g. `kpromo/approval`: the name branch protection requires. */
  context: string;
  state: StatusState;
  /** One line; adapters cut it to the forge's limit (140 characters on GitHub). */
  description: string;
  targetUrl?: string;
}

/**
 * What a branch's protection requires of a merge, as far as both forges report it. Each adapter
 * reads what the forge itself applies to the branch (Gitea's matching rule, GitHub's branch
 * protection and rulesets), so no rule matching is redone here.
 */
export interface BranchProtection {
  /** Approving reviews a merge needs (0: none). */
  requiredApprovals: number;
  /**
   * Commit status contexts a merge needs (empty: none). On Gitea they are glob patterns
   * (`kpromo/*`): ask {@link requiresStatusContext}, not `includes`.
   */
  requiredStatusContexts: string[];
  /** Whether a commit pushed after an approval dismisses it; absent when the token may not read it. */
  dismissesStaleApprovals?: boolean;
  /** Where it comes from, as the forge names it (Gitea's rule name; GitHub's branch protection, rulesets). */
  source?: string;
  /**
   * A part the token may not read (GitHub's branch protection rule without the Administration
   * permission, when rulesets apply): a requirement missing here may be there.
   */
  unread?: string;
}

/** Whether `p` requires the status `context` (Gitea's contexts are globs: `*` any run, `?` one character). */
export function requiresStatusContext(p: BranchProtection, context: string): boolean {
  return p.requiredStatusContexts.some(
    (pattern) =>
      pattern === context ||
      new RegExp(
        `^${pattern
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replaceAll('*', '.*')
          .replaceAll('?', '.')}$`,
      ).test(context),
  );
}

export interface OpenPullRequest {
  head: string;
  base: string;
  title: string;
  body: string;
}

/** Thrown for a refused or failed forge call: names the call and what the forge answered. */
export class ForgeError extends Error {
  override name = 'ForgeError';
  constructor(
    message: string,
    /** HTTP status, when the forge answered. */
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface Forge {
  readonly kind: 'gitea' | 'github';
  /**
   * The open pull request from `head` into `base`, created if there is none (idempotent: a second
   * call, or a new leader, finds the first one). Title and body are updated when they differ.
   */
  ensurePullRequest(repo: RepoRef, pr: OpenPullRequest): Promise<PullRequest>;
  getPullRequest(repo: RepoRef, number: number): Promise<PullRequest>;
  /** Every review, oldest first (all pages). */
  listReviews(repo: RepoRef, number: number): Promise<Review[]>;
  setStatus(repo: RepoRef, sha: string, status: CommitStatus): Promise<void>;
  /**
   * Merges only if the head is still `sha` (the commit the approvals were given on); the forge's
   * branch protection still applies: a refusal is a ForgeError with its message, never bypassed.
   */
  merge(repo: RepoRef, number: number, o: { sha: string; title: string; message: string }): Promise<{ commit: string }>;
  /** Closes without merging (a plan that failed or was replaced). */
  close(repo: RepoRef, number: number): Promise<void>;
  /** The login the token acts as: kpromo's own reviews and merges never count as a person's. */
  currentUser(): Promise<string>;
  /**
   * What the forge requires to merge into `branch`, or undefined when nothing protects it. A token
   * that may not read it is a ForgeError (status 403 or 404), never "unprotected"; one that reads
   * only part of it says so in `unread`.
   */
  branchProtection(repo: RepoRef, branch: string): Promise<BranchProtection | undefined>;
}
