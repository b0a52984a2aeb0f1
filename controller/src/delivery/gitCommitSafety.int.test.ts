import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runGit } from '@kpromo/test-harness';
import { describe, expect, it } from 'vitest';
import { classify } from '../reconcile/plan/errors.js';
import { commitImageChange, GitDeliveryError } from './gitCommit.js';

// The GitOps repository is content the controller does not control: whoever may push there can
// plant symbolic links and files that do not parse. The git delivery must neither read nor write
// outside its checkout through a link, nor quote the repository's file contents into plan status.

const digest = `sha256:${'c'.repeat(64)}`;
const values = 'image:\n  repository: reg.local/prod/app\n  tag: v1.0.0\n';

/** A real bare repository seeded by `seed(workTree)` (which may create symlinks), via the git CLI. */
function repoWith(seed: (work: string) => void): { url: string; dir: string; log(): string[] } {
  const root = mkdtempSync(join(tmpdir(), 'kpromo-gitsafety-'));
  const bare = join(root, 'remote.git');
  const work = join(root, 'seed');
  mkdirSync(work);
  runGit(root, 'init', '--bare', '-q', '-b', 'main', bare);
  runGit(work, 'init', '-q', '-b', 'main');
  seed(work);
  runGit(work, 'add', '-A');
  runGit(work, 'commit', '-q', '-m', 'seed');
  runGit(work, 'push', '-q', bare, 'main');
  return { url: `file://${bare}`, dir: bare, log: () => runGit(bare, 'log', '--format=%s', 'main').split('\n') };
}

function write(work: string, path: string, content: string) {
  mkdirSync(dirname(join(work, path)), { recursive: true });
  writeFileSync(join(work, path), content);
}

function link(work: string, path: string, target: string) {
  mkdirSync(dirname(join(work, path)), { recursive: true });
  symlinkSync(target, join(work, path));
}

const request = (url: string, path = 'apps/shop/values.yaml') => ({
  repository: url,
  branch: 'main',
  path,
  valuesPath: 'image',
  image: 'reg.local/prod/app',
  tag: 'v2.0.0',
  digest,
  message: 'promote shop',
});

/** A file outside every checkout the attacker wants read or overwritten. */
function outsideFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'kpromo-outside-')), 'values.yaml');
  writeFileSync(file, values);
  return file;
}

describe('git delivery and symbolic links in the repository', () => {
  it('refuses a values file that is a symlink to an absolute path outside the checkout, leaving it untouched', async () => {
    const target = outsideFile();
    const repo = repoWith((w) => link(w, 'apps/shop/values.yaml', target));
    const err = await commitImageChange(request(repo.url)).catch((e) => e);
    expect(err).toBeInstanceOf(GitDeliveryError);
    expect(err.message).toMatch(
      /: apps\/shop\/values\.yaml is a symbolic link; the git delivery only edits regular files inside the checkout, never through links$/,
    );
    expect(classify(err)).toMatchObject({ permanent: true });
    expect(readFileSync(target, 'utf8')).toBe(values); // never written
    expect(repo.log()).toEqual(['seed']);
  });

  it('refuses a symlink to /etc/passwd without reading it into the error', async () => {
    const repo = repoWith((w) => link(w, 'apps/shop/values.yaml', '/etc/passwd'));
    const err = await commitImageChange(request(repo.url)).catch((e) => e);
    expect(err).toBeInstanceOf(GitDeliveryError);
    expect(err.message).toContain('apps/shop/values.yaml is a symbolic link');
    expect(err.message).not.toContain('root:');
  });

  it('refuses a relative symlink climbing out of the checkout', async () => {
    const target = outsideFile();
    const repo = repoWith((w) => link(w, 'apps/shop/values.yaml', `../../../../../../../../..${target}`));
    const err = await commitImageChange(request(repo.url)).catch((e) => e);
    expect(err).toBeInstanceOf(GitDeliveryError);
    expect(err.message).toContain('apps/shop/values.yaml is a symbolic link');
    expect(readFileSync(target, 'utf8')).toBe(values);
  });

  it('refuses a directory on the way that is a symlink out of the checkout', async () => {
    const target = outsideFile();
    const repo = repoWith((w) => link(w, 'apps/shop', dirname(target)));
    const err = await commitImageChange(request(repo.url)).catch((e) => e);
    expect(err).toBeInstanceOf(GitDeliveryError);
    expect(err.message).toMatch(/: apps\/shop is a symbolic link; .*never through links$/);
    expect(readFileSync(target, 'utf8')).toBe(values);
  });

  it('refuses a symlink that stays inside the checkout too (the commit would not carry the change)', async () => {
    const repo = repoWith((w) => {
      write(w, 'apps/common/values.yaml', values);
      link(w, 'apps/shop/values.yaml', '../common/values.yaml');
    });
    const err = await commitImageChange(request(repo.url)).catch((e) => e);
    expect(err.message).toContain('apps/shop/values.yaml is a symbolic link');
    expect(repo.log()).toEqual(['seed']);
  });

  it('refuses a path that is a directory, naming it', async () => {
    const repo = repoWith((w) => write(w, 'apps/shop/values.yaml/inner.yaml', values));
    const err = await commitImageChange(request(repo.url)).catch((e) => e);
    expect(err).toBeInstanceOf(GitDeliveryError);
    expect(err.message).toContain('apps/shop/values.yaml is not a regular file');
  });

  it('still edits a regular file next to symlinks', async () => {
    const repo = repoWith((w) => {
      write(w, 'apps/shop/values.yaml', values);
      link(w, 'apps/shop/passwd', '/etc/passwd');
    });
    const res = await commitImageChange(request(repo.url));
    expect(res.changed).toBe(true);
    expect(repo.log()).toEqual(['promote shop', 'seed']);
  });
});

describe('git delivery errors for files that do not parse', () => {
  const SECRET = 'hunter2-S3CR3T-do-not-echo';

  it('names the file, line and column, never the content', async () => {
    // A values file whose broken line holds a credential (a missing quote, a nested mapping).
    const broken = [
      `image:\n  tag: v1\ndb:\n  password: "${SECRET}\n  user: admin\n`,
      `image:\n  tag: v1\ndb: password: ${SECRET}\n`,
    ];
    for (const content of broken) {
      const repo = repoWith((w) => write(w, 'apps/shop/values.yaml', content));
      const err = await commitImageChange(request(repo.url)).catch((e) => e);
      expect(err).toBeInstanceOf(GitDeliveryError);
      expect(err.message).toMatch(
        /\(branch main, file apps\/shop\/values\.yaml\): cannot set image: invalid YAML at line \d+, column \d+ \([A-Z_]+\)$/,
      );
      expect(err.message).not.toContain(SECRET);
      // What a plan records in its status and Events is this message.
      expect(classify(err).message).not.toContain(SECRET);
      expect(classify(err).permanent).toBe(true);
    }
  });
});
