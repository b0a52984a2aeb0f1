import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { componentUsed } from '../cluster/need.js';
import { runBuildScript } from '../cluster/paths.js';
import { startChildServer } from '../cluster/proc.js';
import { runGit, writeTree } from '../git/gitRepo.js';
import { freePort } from '../registry/registry.js';

/**
 * A real Gitea (built from its Go module by test/gitea/build.sh) on loopback, for the pull-request
 * delivery tests: SQLite in a temporary folder, installed and offline, no SSH, no mailer, one admin.
 * Pull requests, reviews, statuses, branch protection and git over HTTP are Gitea's own; the helpers
 * below only set up users, repositories and protection rules through its API.
 */
export interface Gitea {
  /** Base URL, e.g. `http://127.0.0.1:23456` (the API is under `/api/v1`). */
  url: string;
  /** The site administrator (token scope `all`). */
  admin: GiteaUser;
  logFile: string;
  /** Creates a user with a token of `scopes` (default: repositories, issues and pull requests, own user). */
  createUser(login: string, o?: { scopes?: string[] }): Promise<GiteaUser>;
  /** Creates `owner`'s repository `name` with `files` committed (and pushed over HTTP) on `branch`. */
  createRepo(
    owner: GiteaUser,
    name: string,
    o: { files: Record<string, string>; branch?: string },
  ): Promise<{ owner: string; name: string; head: string }>;
  /** Gives `user` `permission` on the repository (approvals count only from users who may write). */
  addCollaborator(
    repo: { owner: string; name: string },
    user: string,
    permission?: 'read' | 'write' | 'admin',
  ): Promise<void>;
  /** Protects `branch` (or changes its rule): required approvals, required status contexts, and who may merge (default: anyone who may write). */
  protectBranch(
    repo: { owner: string; name: string },
    branch: string,
    rule: {
      requiredApprovals?: number;
      statusContexts?: string[];
      mergers?: string[];
      dismissStaleApprovals?: boolean;
    },
  ): Promise<void>;
  /** The repository's clone URL with `user`'s token as password (git over HTTP). */
  gitUrl(user: GiteaUser, repo: { owner: string; name: string }): string;
  /** Calls Gitea's API as `user` (or anonymously); throws naming the call and Gitea's answer unless 2xx. */
  api<T = unknown>(user: GiteaUser | undefined, method: string, path: string, body?: unknown): Promise<T>;
  stop(): Promise<void>;
}

export interface GiteaUser {
  login: string;
  password: string;
  token: string;
}

const run = promisify(execFile);

/** Path of the gitea binary, built on first use (its templates and options are in ../share). */
export function ensureGitea(): string {
  componentUsed('gitea');
  const path = runBuildScript('../gitea/build.sh', [], { quiet: true });
  if (!existsSync(path)) throw new Error(`test/gitea/build.sh printed ${JSON.stringify(path)}, which does not exist`);
  return path;
}

const DEFAULT_SCOPES = ['write:repository', 'write:issue', 'read:user'];

export async function startGitea(): Promise<Gitea> {
  const bin = ensureGitea();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-gitea-'));
  const url = `http://127.0.0.1:${port}`;
  const config = join(dir, 'app.ini');
  const secret = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex');
  const ini: Record<string, Record<string, string | number | boolean>> = {
    '': {
      APP_NAME: 'kpromo test',
      RUN_MODE: 'prod',
      RUN_USER: userInfo().username,
      WORK_PATH: dir,
      // Tests and CI run as root here; Gitea refuses that unless told.
      I_AM_BEING_UNSAFE_RUNNING_AS_ROOT: true,
    },
    server: {
      PROTOCOL: 'http',
      HTTP_ADDR: '127.0.0.1',
      HTTP_PORT: port,
      DOMAIN: '127.0.0.1',
      ROOT_URL: `${url}/`,
      DISABLE_SSH: true,
      START_SSH_SERVER: false,
      OFFLINE_MODE: true,
      LFS_START_SERVER: false,
      APP_DATA_PATH: join(dir, 'data'),
      // Built without bindata: templates and options are read from here.
      STATIC_ROOT_PATH: join(dirname(dirname(bin)), 'share'),
    },
    database: { DB_TYPE: 'sqlite3', PATH: join(dir, 'data', 'gitea.db'), SQLITE_JOURNAL_MODE: 'WAL' },
    repository: { ROOT: join(dir, 'repos'), DEFAULT_BRANCH: 'main' },
    security: { INSTALL_LOCK: true, SECRET_KEY: secret(), INTERNAL_TOKEN: secret() },
    oauth2: { ENABLED: false },
    mailer: { ENABLED: false },
    service: { DISABLE_REGISTRATION: true, ENABLE_NOTIFY_MAIL: false },
    picture: { DISABLE_GRAVATAR: true, ENABLE_FEDERATED_AVATAR: false },
    // In memory: a pull request's mergeability check runs at once, nothing is left on disk.
    queue: { TYPE: 'channel' },
    cache: { ADAPTER: 'memory' },
    session: { PROVIDER: 'memory' },
    indexer: { ISSUE_INDEXER_TYPE: 'db', REPO_INDEXER_ENABLED: false },
    actions: { ENABLED: false },
    // No "Create a new pull request" hint on every push.
    git: { PULL_REQUEST_PUSH_MESSAGE: false },
    'cron.update_checker': { ENABLED: false },
    log: { MODE: 'console', LEVEL: 'Warn', ROOT_PATH: join(dir, 'log') },
  };
  writeFileSync(
    config,
    Object.entries(ini)
      .map(([section, keys]) =>
        [section ? `[${section}]` : '', ...Object.entries(keys).map(([k, v]) => `${k} = ${v}`)].join('\n'),
      )
      .join('\n\n'),
  );
  const cliArgs = ['--config', config, '--work-path', dir];
  const logFile = join(dir, 'gitea.log');
  const server = await startChildServer({
    name: 'gitea',
    bin,
    args: ['web', ...cliArgs],
    logFile,
    ready: async () => (await fetch(`${url}/api/v1/version`)).ok,
    timeoutMs: 120_000,
    pollMs: 250,
  }).catch((e: unknown) => {
    // The error carries the log's tail.
    rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  const stop = async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };

  const api: Gitea['api'] = async (user, method, path, body) => {
    const res = await fetch(`${url}/api/v1${path}`, {
      method,
      headers: {
        ...(user ? { authorization: `token ${user.token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`Gitea ${method} ${path} as ${user?.login ?? 'anonymous'}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as never;
  };
  const tokenFor = async (login: string, password: string, scopes: string[]) => {
    const res = await fetch(`${url}/api/v1/users/${login}/tokens`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${login}:${password}`).toString('base64')}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name: `kpromo-test-${Date.now()}`, scopes }),
    });
    const body = (await res.json()) as { sha1?: string; message?: string };
    if (!res.ok || !body.sha1)
      throw new Error(`Gitea: creating a token for ${login} failed: ${res.status} ${body.message ?? ''}`);
    return body.sha1;
  };

  try {
    const password = `pw-${secret().slice(0, 20)}`;
    await run(bin, [
      'admin',
      'user',
      'create',
      ...cliArgs,
      '--username',
      'kpromo-admin',
      '--password',
      password,
      '--email',
      'kpromo-admin@kpromo.local',
      '--admin',
      '--must-change-password=false',
    ]).catch((e: { stderr?: string; message: string }) => {
      throw new Error(`gitea admin user create failed: ${e.stderr || e.message}`);
    });
    const admin: GiteaUser = {
      login: 'kpromo-admin',
      password,
      token: await tokenFor('kpromo-admin', password, ['all']),
    };

    const gitUrl: Gitea['gitUrl'] = (user, repo) => {
      const u = new URL(`${url}/${repo.owner}/${repo.name}.git`);
      u.username = user.login;
      u.password = user.token;
      return u.toString();
    };

    return {
      url,
      admin,
      logFile,
      api,
      gitUrl,
      stop,
      createUser: async (login, o = {}) => {
        const pw = `pw-${secret().slice(0, 20)}`;
        await api(admin, 'POST', '/admin/users', {
          username: login,
          email: `${login}@kpromo.local`,
          password: pw,
          must_change_password: false,
        });
        return { login, password: pw, token: await tokenFor(login, pw, o.scopes ?? DEFAULT_SCOPES) };
      },
      createRepo: async (owner, name, o) => {
        const branch = o.branch ?? 'main';
        // As the admin: the owner's token keeps the scopes a test gives it (creating needs write:user).
        await api(admin, 'POST', `/admin/users/${owner.login}/repos`, {
          name,
          default_branch: branch,
          auto_init: false,
        });
        const work = mkdtempSync(join(tmpdir(), 'kpromo-gitea-seed-'));
        try {
          runGit(work, 'init', '-q', '-b', branch);
          writeTree(work, o.files);
          runGit(work, 'add', '-A');
          runGit(work, 'commit', '-q', '-m', 'seed');
          runGit(work, '-c', 'credential.helper=', 'push', '-q', gitUrl(owner, { owner: owner.login, name }), branch);
          return { owner: owner.login, name, head: runGit(work, 'rev-parse', 'HEAD') };
        } catch (e) {
          throw new Error(`Gitea: seeding ${owner.login}/${name} over HTTP failed: ${(e as Error).message}`);
        } finally {
          rmSync(work, { recursive: true, force: true });
        }
      },
      addCollaborator: async (repo, user, permission = 'write') => {
        await api(admin, 'PUT', `/repos/${repo.owner}/${repo.name}/collaborators/${user}`, { permission });
      },
      protectBranch: async (repo, branch, rule) => {
        const base = `/repos/${repo.owner}/${repo.name}/branch_protections`;
        const existing = await api<Array<{ rule_name: string }>>(admin, 'GET', base);
        // A rule of that name is changed in place (Gitea refuses a second one).
        const exists = existing.some((r) => r.rule_name === branch);
        await api(admin, exists ? 'PATCH' : 'POST', exists ? `${base}/${encodeURIComponent(branch)}` : base, {
          ...(exists ? {} : { rule_name: branch }),
          required_approvals: rule.requiredApprovals ?? 0,
          enable_status_check: (rule.statusContexts?.length ?? 0) > 0,
          status_check_contexts: rule.statusContexts ?? [],
          enable_merge_whitelist: rule.mergers !== undefined,
          merge_whitelist_usernames: rule.mergers ?? [],
          dismiss_stale_approvals: rule.dismissStaleApprovals ?? false,
        });
      },
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
