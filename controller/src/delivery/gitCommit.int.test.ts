import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createBareRepo, headCommit, pushFiles, startGitHttpServer } from '@kpromo/test-harness';
import { describe, expect, it } from 'vitest';
import { commitImageChange } from './gitCommit.js';

const digest = `sha256:${'b'.repeat(64)}`;
const values = '# app values\nimage:\n  repository: reg.local/prod/app\n  tag: v1.0.0 # set by kpromo\nreplicas: 2\n';

function base(url: string) {
  return {
    repository: url,
    branch: 'main',
    path: 'apps/app/values.yaml',
    valuesPath: 'image',
    image: 'reg.local/prod/app',
    tag: 'v1.1.0-20260101T000000Z',
    digest,
    message: 'promote app to v1.1.0 (plan p-1)',
    author: { name: 'kpromo-bot', email: 'bot@kpromo.local' },
  };
}

const gitOut = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

describe('commitImageChange against real bare repositories', () => {
  it('commits the change with message and author, and a second call is a no-op', async () => {
    const repo = createBareRepo({ 'apps/app/values.yaml': values, 'README.md': 'x\n' });
    const first = await commitImageChange(base(repo.url));
    expect(first.changed).toBe(true);
    expect(repo.log()).toEqual(['promote app to v1.1.0 (plan p-1)', 'seed']);
    expect(gitOut(repo.dir, 'rev-parse', 'main')).toBe(first.commit);
    expect(gitOut(repo.dir, 'log', '-1', '--format=%an <%ae>', 'main')).toBe('kpromo-bot <bot@kpromo.local>');
    expect(repo.read('apps/app/values.yaml')).toBe(
      `# app values\nimage:\n  repository: reg.local/prod/app\n  tag: v1.1.0-20260101T000000Z # set by kpromo\n  digest: ${digest}\nreplicas: 2`,
    );

    const second = await commitImageChange(base(repo.url));
    expect(second).toMatchObject({ changed: false, commit: first.commit });
    expect(repo.log()).toHaveLength(2);
  });

  it('writes the full reference into a string value at a nested path', async () => {
    const repo = createBareRepo({ 'hr.yaml': 'spec:\n  values:\n    image: reg.local/dev/app:v1\n' });
    // auth becomes a URL-scoped http.extraHeader; file:// ignores it, but simple-git must accept it.
    const auth = { username: 'u', password: 'secret' };
    const res = await commitImageChange({ ...base(repo.url), path: 'hr.yaml', valuesPath: 'spec.values.image', auth });
    expect(res.changed).toBe(true);
    expect(repo.read('hr.yaml')).toBe(
      `spec:\n  values:\n    image: reg.local/prod/app:v1.1.0-20260101T000000Z@${digest}`,
    );
  });

  it('redoes the change on top of a concurrent push', async () => {
    const repo = createBareRepo({ 'apps/app/values.yaml': values, 'apps/other/values.yaml': values });
    // Another writer pushes to the same file right before our first push, so ours is rejected.
    const other = mkdtempSync(join(tmpdir(), 'kpromo-other-'));
    const res = await commitImageChange(base(repo.url), {
      beforePush: async (attempt) => {
        if (attempt > 1) return;
        gitOut(other, 'clone', '-q', repo.url, '.');
        const file = join(other, 'apps/app/values.yaml');
        writeFileSync(file, readFileSync(file, 'utf8').replace('replicas: 2', 'replicas: 5'));
        gitOut(other, '-c', 'user.name=o', '-c', 'user.email=o@x', 'commit', '-qam', 'scale app');
        gitOut(other, 'push', '-q', 'origin', 'main');
      },
    });
    expect(res).toMatchObject({ changed: true, attempts: 2 });
    expect(repo.log()).toEqual(['promote app to v1.1.0 (plan p-1)', 'scale app', 'seed']);
    const content = repo.read('apps/app/values.yaml');
    expect(content).toContain('replicas: 5');
    expect(content).toContain('tag: v1.1.0-20260101T000000Z # set by kpromo');
  });

  it('resolves real concurrent writers to different files', async () => {
    const repo = createBareRepo({ 'a.yaml': values, 'b.yaml': values, 'c.yaml': values });
    const results = await Promise.all(
      ['a', 'b', 'c'].map((f) => commitImageChange({ ...base(repo.url), path: `${f}.yaml`, message: `promote ${f}` })),
    );
    expect(results.every((r) => r.changed)).toBe(true);
    expect(repo.log().sort()).toEqual(['promote a', 'promote b', 'promote c', 'seed']);
    for (const f of ['a', 'b', 'c']) expect(repo.read(`${f}.yaml`)).toContain(`digest: ${digest}`);
  });

  it('names the repository and path when the file is missing', async () => {
    const repo = createBareRepo({ 'README.md': 'x\n' });
    await expect(commitImageChange({ ...base(repo.url), path: 'apps/missing.yaml' })).rejects.toThrow(
      `${repo.url} (branch main, file apps/missing.yaml): the file does not exist`,
    );
    await expect(commitImageChange({ ...base(repo.url), path: 'apps/missing.yaml' })).rejects.toMatchObject({
      code: 'FILE_NOT_FOUND',
      permanent: true,
    });
    await expect(commitImageChange({ ...base(repo.url), branch: 'nope' })).rejects.toThrow(
      /git clone failed.*check the repository URL and branch/s,
    );
    expect(repo.log()).toEqual(['seed']);
  });
});

/** Command lines of every running process (what any local user can read from /proc/<pid>/cmdline). */
function cmdlines(): Array<{ pid: string; argv: string }> {
  const out: Array<{ pid: string; argv: string }> = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      out.push({ pid, argv: readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ') });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

describe("a pull request's own branch (createFrom, expectHead)", () => {
  const app2 = (url: string) => ({
    ...base(url),
    path: 'apps/other/values.yaml',
    message: 'promote other (plan p-1)',
  });

  it('starts the branch from its base, replacing commits someone planted under the guessable name', async () => {
    const repo = createBareRepo({ 'apps/app/values.yaml': values, 'apps/other/values.yaml': values });
    gitOut(repo.dir, 'branch', 'kpromo/p-1', 'main');
    pushFiles(repo.dir, { 'apps/other/values.yaml': 'image: evil.example/x\n' }, 'planted', 'kpromo/p-1');
    const first = await commitImageChange({ ...base(repo.url), branch: 'kpromo/p-1', createFrom: 'main' });
    expect(headCommit(repo.dir, 'kpromo/p-1')).toBe(first.commit);
    expect(gitOut(repo.dir, 'log', '--format=%s', 'kpromo/p-1').split('\n')).toEqual([
      'promote app to v1.1.0 (plan p-1)',
      'seed',
    ]);
    expect(gitOut(repo.dir, 'show', 'kpromo/p-1:apps/other/values.yaml')).toBe(values.trim());
    // The base is untouched: the promotion reaches it only through the merge.
    expect(repo.log()).toEqual(['seed']);
  });

  it("builds the next app's commit on kpromo's last commit only", async () => {
    const repo = createBareRepo({ 'apps/app/values.yaml': values, 'apps/other/values.yaml': values });
    const first = await commitImageChange({ ...base(repo.url), branch: 'kpromo/p-1', createFrom: 'main' });
    const second = await commitImageChange({
      ...app2(repo.url),
      branch: 'kpromo/p-1',
      createFrom: 'main',
      expectHead: first.commit,
    });
    expect(gitOut(repo.dir, 'rev-parse', `${second.commit}~1`)).toBe(first.commit);
    expect(headCommit(repo.dir, 'kpromo/p-1')).toBe(second.commit);
  });

  it('refuses to build on a branch someone pushed to after kpromo, naming both commits', async () => {
    const repo = createBareRepo({ 'apps/app/values.yaml': values, 'apps/other/values.yaml': values });
    const first = await commitImageChange({ ...base(repo.url), branch: 'kpromo/p-1', createFrom: 'main' });
    const theirs = pushFiles(repo.dir, { 'extra.yaml': 'x: 1\n' }, 'sneaked in', 'kpromo/p-1');
    const err = await commitImageChange({
      ...app2(repo.url),
      branch: 'kpromo/p-1',
      createFrom: 'main',
      expectHead: first.commit,
    }).catch((e: unknown) => e as Error & { code?: string; permanent?: boolean });
    expect(err).toMatchObject({ code: 'BRANCH_CHANGED', permanent: true });
    expect((err as Error).message).toContain(theirs);
    expect(headCommit(repo.dir, 'kpromo/p-1')).toBe(theirs);
  });

  it('refuses, rather than redoes, a push someone raced onto the branch', async () => {
    const repo = createBareRepo({ 'apps/app/values.yaml': values, 'apps/other/values.yaml': values });
    const first = await commitImageChange({ ...base(repo.url), branch: 'kpromo/p-1', createFrom: 'main' });
    let theirs = '';
    const err = await commitImageChange(
      { ...app2(repo.url), branch: 'kpromo/p-1', createFrom: 'main', expectHead: first.commit },
      {
        beforePush: async () => {
          theirs = pushFiles(repo.dir, { 'extra.yaml': 'x: 1\n' }, 'raced', 'kpromo/p-1');
        },
      },
    ).catch((e: unknown) => e as { code?: string });
    expect(err).toMatchObject({ code: 'BRANCH_CHANGED' });
    expect(headCommit(repo.dir, 'kpromo/p-1')).toBe(theirs);
  });
});

describe('commitImageChange over HTTP with credentials', () => {
  const PASSWORD = 'pw-7f3a9c1e-never-on-a-command-line';
  const auth = { username: 'kpromo-bot', password: PASSWORD };
  const secrets = [PASSWORD, Buffer.from(`kpromo-bot:${PASSWORD}`).toString('base64')];

  it('pushes with the credentials, which never appear on any git command line', async () => {
    const repo = createBareRepo({ 'apps/app/values.yaml': values });
    const srv = await startGitHttpServer({ root: dirname(repo.dir), users: { 'kpromo-bot': PASSWORD }, delayMs: 400 });
    // A `git` first on PATH that records its argv and runs the real git: what simple-git spawns.
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    const bin = mkdtempSync(join(tmpdir(), 'kpromo-gitwrap-'));
    const argvLog = join(bin, 'argv.log');
    writeFileSync(
      join(bin, 'git'),
      `#!/bin/sh\nprintf '%s ' "$@" >> '${argvLog}'\necho >> '${argvLog}'\nexec '${realGit}' "$@"\n`,
    );
    chmodSync(join(bin, 'git'), 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    // Meanwhile scan every process's command line, as another user on the machine could.
    const seen = new Map<string, string>();
    let scanning = true;
    const scanner = (async () => {
      while (scanning) {
        for (const p of cmdlines())
          if (/\bgit\b|git-remote|git-receive|git-upload/.test(p.argv)) seen.set(p.pid, p.argv);
        await sleep(2);
      }
    })();
    try {
      const res = await commitImageChange({ ...base(srv.url(basename(repo.dir))), auth });
      expect(res.changed).toBe(true);
      expect(repo.log()).toEqual(['promote app to v1.1.0 (plan p-1)', 'seed']);
    } finally {
      scanning = false;
      await scanner;
      process.env.PATH = path;
      await srv.stop();
    }
    // The push really went over HTTP, authenticated as the bot.
    expect(srv.requests.some((r) => r.path.endsWith('/git-receive-pack') && r.user === 'kpromo-bot')).toBe(true);
    // simple-git ran our wrapper for clone and push, and their command lines carry no secret.
    const argv = readFileSync(argvLog, 'utf8');
    expect(argv).toMatch(/\bclone\b/);
    expect(argv).toMatch(/\bpush\b/);
    // The scan saw the git processes of the push (held open by the server delay).
    const lines = [...seen.values()];
    expect(lines.some((l) => l.includes('git-remote-http') || /\bpush\b/.test(l))).toBe(true);
    for (const s of secrets) {
      expect(argv).not.toContain(s);
      expect(lines.filter((l) => l.includes(s))).toEqual([]);
    }
  });

  it('fails without prompting on wrong credentials, and never follows a redirect elsewhere', async () => {
    const repo = createBareRepo({ 'apps/app/values.yaml': values });
    const srv = await startGitHttpServer({ root: dirname(repo.dir), users: { 'kpromo-bot': 'right' } });
    const elsewhere: Array<string | undefined> = [];
    const evil = createServer((req, res) => {
      elsewhere.push(req.headers.authorization);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    const redirector = createServer((req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${(evil.address() as AddressInfo).port}${req.url}` }).end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
    try {
      await expect(commitImageChange({ ...base(srv.url(basename(repo.dir))), auth })).rejects.toThrow(
        /git clone failed.*check the credentials Secret of delivery.git/s,
      );
      expect(srv.requests.some((r) => r.authorization !== undefined && r.user === undefined)).toBe(true);
      const redirecting = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/remote.git`;
      await expect(commitImageChange({ ...base(redirecting), auth })).rejects.toThrow(/git clone failed/);
      expect(elsewhere).toEqual([]);
    } finally {
      await srv.stop();
      evil.close();
      redirector.close();
    }
    expect(repo.log()).toEqual(['seed']);
  });
});
