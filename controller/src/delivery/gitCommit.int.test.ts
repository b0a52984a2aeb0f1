import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBareRepo } from '@kpromo/test-harness';
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
    // auth becomes an http.extraHeader; file:// ignores it, but simple-git must accept the option.
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
