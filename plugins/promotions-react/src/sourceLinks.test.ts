import { describe, expect, it } from 'vitest';
import { commitUrl, gitCommitUrl, registryImageUrl, safeHttpUrl, sourceLinks, sourceRepository } from './sourceLinks';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

describe('source links from untrusted labels', () => {
  it('links only http(s) URLs without credentials', () => {
    expect(safeHttpUrl('https://github.com/org/app')).toBe('https://github.com/org/app');
    for (const bad of [
      'javascript:alert(1)',
      'JaVaScRiPt:alert(1)',
      ' javascript:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'vbscript:x',
      'file:///etc/passwd',
      'https://user:token@github.com/org/app',
      '//github.com/org/app',
      'not a url',
      undefined,
    ])
      expect(safeHttpUrl(bad), String(bad)).toBeUndefined();
  });

  it('recognises repositories on github.com, gitlab.com and self-hosted forges with their own path patterns', () => {
    expect(sourceRepository('https://github.com/org/app.git')).toEqual({
      url: 'https://github.com/org/app',
      name: 'github.com/org/app',
      style: 'github',
    });
    expect(sourceRepository('git+https://github.com/org/app')?.url).toBe('https://github.com/org/app');
    expect(sourceRepository('https://gitlab.com/group/sub/app')?.style).toBe('gitlab');
    expect(sourceRepository('https://gitea.example.com/org/app')).toMatchObject({
      url: 'https://gitea.example.com/org/app',
      style: 'github',
    });
    expect(sourceRepository('https://gitlab.example.com/a/b/c')?.style).toBe('gitlab');
    // no repository shape: no commit links on that host
    for (const bad of [
      'https://github.com/org',
      'https://github.com/org/app/tree/main',
      'https://github.com/org/app?x=1',
      'https://github.com/org/app#readme',
      'https://evil.example/%2e%2e/x',
      'javascript:alert(1)//github.com/org/app',
      'ssh://git@github.com/org/app',
    ])
      expect(sourceRepository(bad), bad).toBeUndefined();
  });

  it('builds commit and compare links only from commit ids, on the source host', () => {
    const gh = sourceRepository('https://github.com/org/app')!;
    const gl = sourceRepository('https://gitlab.com/g/app')!;
    expect(commitUrl(gh, A)).toBe(`https://github.com/org/app/commit/${A}`);
    expect(commitUrl(gl, 'ABCDEF1')).toBe('https://gitlab.com/g/app/-/commit/abcdef1');
    expect(commitUrl(gh, 'main')).toBeUndefined();
    expect(commitUrl(gh, '../../x')).toBeUndefined();
    expect(
      sourceLinks(
        { source: 'https://github.com/org/app', revision: B },
        { source: 'https://github.com/org/app.git', revision: A },
      ),
    ).toEqual({
      repository: gh,
      commit: { url: `https://github.com/org/app/commit/${B}`, revision: B },
      changes: `https://github.com/org/app/compare/${A}...${B}`,
    });
    expect(
      sourceLinks(
        { source: 'https://gitlab.com/g/app', revision: B },
        { source: 'https://gitlab.com/g/app', revision: A },
      ).changes,
    ).toBe(`https://gitlab.com/g/app/-/compare/${A}...${B}`);
    // different repositories, or the old image without labels: no comparison
    expect(
      sourceLinks(
        { source: 'https://github.com/org/app', revision: B },
        { source: 'https://github.com/org/other', revision: A },
      ).changes,
    ).toBeUndefined();
    expect(sourceLinks({ source: 'https://github.com/org/app', revision: B }).changes).toBeUndefined();
    expect(sourceLinks({ source: 'javascript:alert(1)', revision: B, url: 'javascript:alert(2)' })).toEqual({});
    expect(sourceLinks({ url: 'https://example.com/image' })).toEqual({ imageInfo: 'https://example.com/image' });
  });

  it('links images on registries with known web pages only', () => {
    const d = `sha256:${'c'.repeat(64)}`;
    expect(registryImageUrl('docker.io', 'library/nginx')).toBe('https://hub.docker.com/_/nginx');
    expect(registryImageUrl('docker.io', 'org/app')).toBe('https://hub.docker.com/r/org/app');
    expect(registryImageUrl('ghcr.io', 'org/app')).toBe('https://ghcr.io/org/app');
    expect(registryImageUrl('quay.io', 'org/app', d)).toBe(`https://quay.io/repository/org/app/manifest/${d}`);
    expect(registryImageUrl('registry.internal:5000', 'org/app')).toBeUndefined();
    expect(registryImageUrl('ghcr.io', 'org/../x')).toBeUndefined();
  });

  it('links a GitOps commit on a forge, not on ssh or unknown shapes', () => {
    expect(gitCommitUrl('https://github.com/org/deploy.git', A)).toBe(`https://github.com/org/deploy/commit/${A}`);
    expect(gitCommitUrl('ssh://git@github.com/org/deploy.git', A)).toBeUndefined();
    expect(gitCommitUrl('https://github.com/org/deploy', 'HEAD')).toBeUndefined();
  });
});
