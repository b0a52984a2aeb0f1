import { randomInt } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type SimpleGit, simpleGit } from 'simple-git';
import type { CommitImageChangeRequest } from '../extension/deliveryMethod.js';
import { withSpan } from '../observability/tracing.js';
import { setImageInYaml } from './yamlEdit.js';

export interface CommitImageChangeResult {
  commit: string;
  changed: boolean;
  /** Push attempts made (more than 1 when another writer pushed first). */
  attempts: number;
}

export interface CommitOptions {
  maxAttempts?: number;
  /** Test seam: runs before each push, e.g. to race another writer deterministically. */
  beforePush?: (attempt: number) => Promise<void>;
}

const DEFAULT_AUTHOR = { name: 'kpromo', email: 'kpromo@noreply.local' };

export type GitDeliveryErrorCode =
  | 'FILE_NOT_FOUND'
  | 'INVALID_FILE'
  | 'PUSH_CONFLICT'
  | 'GIT_FAILED'
  | 'BRANCH_CHANGED';

/** `permanent` tells a reconciler not to retry: the repository content or config must change first. */
export class GitDeliveryError extends Error {
  override name = 'GitDeliveryError';
  readonly permanent: boolean;
  constructor(
    readonly code: GitDeliveryErrorCode,
    message: string,
  ) {
    super(message);
    this.permanent = code === 'FILE_NOT_FOUND' || code === 'INVALID_FILE' || code === 'BRANCH_CHANGED';
  }
}

/**
 * Writes an image change to a GitOps repository: shallow clone, edit the YAML value, commit, push.
 * A push rejected because someone else pushed first is redone on top of their commit (bounded).
 * Idempotent: when the file already holds the value nothing is committed.
 */
export function commitImageChange(
  req: CommitImageChangeRequest,
  opts: CommitOptions = {},
): Promise<CommitImageChangeResult> {
  const where = `${redact(req.repository)} (branch ${req.branch}, file ${req.path})`;
  return withSpan(
    'git.commitImageChange',
    { 'git.repository': redact(req.repository), 'git.path': req.path },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'kpromo-gitops-'));
      try {
        const git = client(dir, req);
        // A pull request's branch is kpromo's alone: its first write starts it from the base
        // (replacing whatever someone put there: a branch name can be guessed), every later write
        // builds on kpromo's own last commit and nothing else.
        const fresh = !!req.createFrom && !req.expectHead;
        const from = fresh ? req.createFrom! : req.branch;
        await run(where, 'clone', () =>
          git.clone(req.repository, dir, ['--depth', '1', '--branch', from, '--single-branch', '--no-tags']),
        );
        if (fresh) await git.checkout(['-b', req.branch]);
        if (req.expectHead) {
          const head = await git.revparse(['HEAD']);
          if (head !== req.expectHead) throw branchChanged(where, req.expectHead, head);
        }
        const author = req.author ?? DEFAULT_AUTHOR;
        await git.addConfig('user.name', author.name).addConfig('user.email', author.email);
        const maxAttempts = opts.maxAttempts ?? 5;
        for (let attempt = 1; ; attempt++) {
          const edited = await applyEdit(dir, req, where);
          if (!edited && !fresh) return { commit: await git.revparse(['HEAD']), changed: false, attempts: attempt };
          if (edited) {
            await git.add(req.path);
            await git.commit(req.message, [req.path]);
          }
          await opts.beforePush?.(attempt);
          const pushed = await tryPush(git, req.branch, where, fresh);
          if (pushed) return { commit: await git.revparse(['HEAD']), changed: edited, attempts: attempt };
          if (req.expectHead) throw branchChanged(where, req.expectHead, 'a commit someone else pushed');
          if (attempt >= maxAttempts) {
            throw new GitDeliveryError(
              'PUSH_CONFLICT',
              `${where}: push rejected ${attempt} times because others keep pushing; retry later`,
            );
          }
          // Redo instead of rebase: a shallow clone may lack the merge base, and re-applying the
          // edit to their tip is exactly what a rebase of this one-value change would produce.
          await sleep(randomInt(50, 250) * attempt);
          await run(where, 'fetch', () => git.fetch(['--depth', '1', 'origin', req.branch]));
          await git.reset(['--hard', 'FETCH_HEAD']);
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
}

/** A pull request's branch moved away from kpromo's own commit: what was built on it is not kpromo's alone. */
function branchChanged(where: string, expected: string, found: string): GitDeliveryError {
  return new GitDeliveryError(
    'BRANCH_CHANGED',
    `${where}: the branch is at ${found.slice(0, 40)}, not at kpromo's last commit ${expected.slice(0, 12)}: someone pushed to it; kpromo does not build a promotion on commits it did not make (create a new plan)`,
  );
}

/**
 * The commit a branch of a GitOps repository points at, read with the delivery's credentials the
 * way a promotion sends them (header scoped to the URL, no redirects); undefined when the
 * repository has no such branch. For `kpromo doctor`: reachability and credentials, nothing cloned.
 */
export async function remoteBranchCommit(
  req: Pick<CommitImageChangeRequest, 'repository' | 'branch' | 'auth'>,
): Promise<string | undefined> {
  const where = `${redact(req.repository)} (branch ${req.branch})`;
  const dir = await mkdtemp(join(tmpdir(), 'kpromo-lsremote-'));
  try {
    const out = await run(where, 'ls-remote', () =>
      client(dir, req).listRemote(['--heads', req.repository, `refs/heads/${req.branch}`]),
    );
    return /^([0-9a-f]{40,64})\s/m.exec(out)?.[1];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function client(dir: string, req: Pick<CommitImageChangeRequest, 'auth' | 'repository'>): SimpleGit {
  // simple-git guards git-affecting env vars; pass on only the CA settings operators use for HTTPS.
  const env: Record<string, string> = { GIT_TERMINAL_PROMPT: '0' }; // fail instead of prompting for a password
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && (!k.startsWith('GIT_') || ALLOWED_ENV.includes(k))) env[k] = v;
  }
  const allowEnvironment = ['GIT_TERMINAL_PROMPT', ...ALLOWED_ENV];
  const config = authConfig(req);
  if (config.length) {
    // Config through the environment (git >= 2.31), not `-c` arguments: a command line is readable
    // by every user of the machine (/proc/<pid>/cmdline), the environment only by the same user.
    env.GIT_CONFIG_COUNT = String(config.length);
    allowEnvironment.push('GIT_CONFIG_COUNT');
    config.forEach(([key, value], i) => {
      env[`GIT_CONFIG_KEY_${i}`] = key;
      env[`GIT_CONFIG_VALUE_${i}`] = value;
      allowEnvironment.push(`GIT_CONFIG_KEY_${i}`, `GIT_CONFIG_VALUE_${i}`);
    });
  }
  return simpleGit({
    baseDir: dir,
    allowEnvironment,
    allowConfig: ['http.followRedirects', 'http.*.extraHeader'],
    unsafe: config.length ? { allowUnsafeConfigEnvCount: true } : {},
  }).env(env);
}

/**
 * Git config carrying the credentials: a header (not a URL with credentials, so the password never
 * lands in .git/config or messages) scoped to the allowed URL, and no redirects, so it cannot be
 * sent anywhere else.
 */
function authConfig(req: Pick<CommitImageChangeRequest, 'auth' | 'repository'>): Array<[string, string]> {
  if (!req.auth) return [];
  const basic = Buffer.from(`${req.auth.username}:${req.auth.password}`).toString('base64');
  return [
    [`http.${req.auth.url ?? req.repository}.extraHeader`, `Authorization: Basic ${basic}`],
    ['http.followRedirects', 'false'],
  ];
}

const ALLOWED_ENV = ['GIT_SSL_CAINFO', 'GIT_SSL_CAPATH'];

/**
 * Checks that `path` (already a relative path without "..", see checkRepoFilePath) names a regular
 * file of the checkout reached without following any symbolic link: the repository's content is not
 * the controller's, and a link (`values.yaml -> /etc/passwd`, a directory `apps -> /`) would make it
 * read or write outside the checkout. A link that stays inside is refused as well: the commit of
 * `path` would not carry the change. Throws a permanent GitDeliveryError naming the path.
 */
async function checkRegularFile(dir: string, path: string, where: string): Promise<void> {
  const parts = path.split('/');
  for (let i = 1; i <= parts.length; i++) {
    const shown = parts.slice(0, i).join('/');
    let st: Awaited<ReturnType<typeof lstat>>;
    try {
      st = await lstat(join(dir, ...parts.slice(0, i)));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        throw new GitDeliveryError(
          'FILE_NOT_FOUND',
          `${where}: the file does not exist; create it or fix the Environment's delivery.git.path`,
        );
      }
      throw err;
    }
    if (st.isSymbolicLink())
      throw new GitDeliveryError(
        'INVALID_FILE',
        `${where}: ${shown} is a symbolic link; the git delivery only edits regular files inside the checkout, never through links`,
      );
    if (i < parts.length && !st.isDirectory())
      throw new GitDeliveryError(
        'FILE_NOT_FOUND',
        `${where}: ${shown} is not a directory; fix the Environment's delivery.git.path`,
      );
    if (i === parts.length && !st.isFile())
      throw new GitDeliveryError(
        'INVALID_FILE',
        `${where}: ${shown} is not a regular file; fix the Environment's delivery.git.path`,
      );
  }
}

/** Edits the file in the work tree; false when it already holds the value. */
async function applyEdit(dir: string, req: CommitImageChangeRequest, where: string): Promise<boolean> {
  await checkRegularFile(dir, req.path, where);
  const file = join(dir, req.path);
  // O_NOFOLLOW as well: the last component is opened only if it still is no link.
  const text = await withFile(file, constants.O_RDONLY, where, (f) => f.readFile('utf8'));
  let out: { text: string; changed: boolean };
  try {
    out = setImageInYaml(text, req.valuesPath, { image: req.image, tag: req.tag, digest: req.digest });
  } catch (err) {
    throw new GitDeliveryError('INVALID_FILE', `${where}: cannot set ${req.valuesPath}: ${(err as Error).message}`);
  }
  if (out.changed) await withFile(file, constants.O_WRONLY | constants.O_TRUNC, where, (f) => f.writeFile(out.text));
  return out.changed;
}

async function withFile<T>(
  file: string,
  flags: number,
  where: string,
  fn: (f: Awaited<ReturnType<typeof open>>) => Promise<T>,
): Promise<T> {
  let f: Awaited<ReturnType<typeof open>>;
  try {
    f = await open(file, flags | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP')
      throw new GitDeliveryError('INVALID_FILE', `${where}: the file is a symbolic link; not followed`);
    throw err;
  }
  try {
    return await fn(f);
  } finally {
    await f.close();
  }
}

/** true when pushed; false when rejected because the remote moved (someone else pushed). */
async function tryPush(git: SimpleGit, branch: string, where: string, force = false): Promise<boolean> {
  try {
    await git.push('origin', `${force ? '+' : ''}HEAD:refs/heads/${branch}`);
    return true;
  } catch (err) {
    const msg = String((err as Error).message);
    if (/non-fast-forward|fetch first|\[rejected\]|failed to update ref|cannot lock ref/i.test(msg)) return false;
    throw new GitDeliveryError('GIT_FAILED', `${where}: push failed: ${redact(msg.trim())}`);
  }
}

async function run<T>(where: string, what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const msg = redact(String((err as Error).message).trim());
    const hint = /Authentication|could not read Username|403|401/i.test(msg)
      ? '; check the credentials Secret of delivery.git'
      : /not found|does not appear|Remote branch .* not found/i.test(msg)
        ? '; check the repository URL and branch'
        : '';
    throw new GitDeliveryError('GIT_FAILED', `${where}: git ${what} failed: ${msg}${hint}`);
  }
}

/** Strips credentials embedded in URLs (https://user:pass@host) from anything shown to users. */
function redact(s: string): string {
  return s.replace(/(\w+:\/\/)[^/@\s]+@/g, '$1***@');
}
