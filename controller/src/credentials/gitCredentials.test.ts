import { describe, expect, it } from 'vitest';
import { GIT_URL_ANNOTATION, gitCredentialsFor, normalizeGitUrl, urlHasPrefix } from './gitCredentials.js';
import type { SecretObject } from './secrets.js';

const secret = (data: Record<string, string>, annotations: Record<string, string> = {}): SecretObject => ({
  namespace: 'team-a',
  name: 'git',
  type: 'kubernetes.io/basic-auth',
  data,
  annotations,
});
const under = (url: string, prefix: string) =>
  urlHasPrefix(normalizeGitUrl(url, 'url'), normalizeGitUrl(prefix, 'prefix'));

describe('git URL prefix matching', () => {
  it.each([
    ['https://git.example.com/org/repo.git', 'https://git.example.com/org/', true],
    ['https://git.example.com/org/repo.git', 'https://git.example.com/org', true],
    ['https://git.example.com/org/sub/repo.git', 'https://git.example.com/org/', true],
    ['https://git.example.com/org/repo.git', 'https://git.example.com/', true],
    ['https://GIT.Example.com:443/org/repo.git', 'https://git.example.com/org/', true], // host case, default port
    ['https://git.example.com//org/repo.git', 'https://git.example.com/org/', true], // empty segments
    // Segment boundary, not string prefix.
    ['https://git.example.com/org-evil/repo.git', 'https://git.example.com/org', false],
    ['https://git.example.com/organisation/repo.git', 'https://git.example.com/org/', false],
    // Host, port and scheme must be the same.
    ['https://git.example.com.evil.io/org/repo.git', 'https://git.example.com/org/', false],
    ['https://evil.com/org/repo.git', 'https://git.example.com/org/', false],
    ['https://git.example.com:8443/org/repo.git', 'https://git.example.com/org/', false],
    ['http://git.example.com/org/repo.git', 'https://git.example.com/org/', false],
    ['https://git.example.com/Org/repo.git', 'https://git.example.com/org/', false], // paths are case-sensitive
  ])('%s under %s: %s', (url, prefix, expected) => {
    expect(under(url, prefix)).toBe(expected);
  });

  it.each([
    ['https://git.example.com@evil.com/org/repo.git', /user info/],
    ['https://user:pw@git.example.com/org/repo.git', /user info/],
    ['https://git.example.com\\@evil.com/org/repo.git', /user info|backslash/],
    ['https://git.example.com/org/../evil/repo.git', /"\." or "\.\." path segments/],
    ['https://git.example.com/org/%2e%2e/evil/repo.git', /encoded/],
    ['https://git.example.com/org%2Fevil/repo.git', /encoded/],
    ['https://git.example.com/org/repo.git?x=1', /query/],
    ['ssh://git@git.example.com/org/repo.git', /not an http\(s\) URL/],
    ['file:///srv/git/repo.git', /not an http\(s\) URL/],
  ])('refuses %s', (url, why) => {
    expect(() => normalizeGitUrl(url, 'delivery.git.repository')).toThrow(why);
  });
});

describe('gitCredentialsFor', () => {
  it('gives the credentials for a repository under the prefix in key url or the annotation', () => {
    const byKey = secret({ username: 'bot', password: 'tok', url: 'https://git.example.com/org/' });
    expect(gitCredentialsFor(byKey, 'https://git.example.com/org/repo.git')).toEqual({
      username: 'bot',
      password: 'tok',
      prefix: 'https://git.example.com/org',
      url: 'https://git.example.com/org/repo.git',
    });
    const byAnnotation = secret({ password: 'tok' }, { [GIT_URL_ANNOTATION]: 'https://git.example.com/org' });
    expect(gitCredentialsFor(byAnnotation, 'https://git.example.com/org/repo.git')).toMatchObject({
      username: 'git',
      password: 'tok',
    });
  });

  it('refuses other repositories, userinfo tricks and Secrets without a prefix, naming the Secret', () => {
    const s = secret({ username: 'bot', password: 'tok', url: 'https://git.example.com/org/' });
    expect(() => gitCredentialsFor(s, 'https://evil.com/org/repo.git')).toThrow(
      /Secret team-a\/git is only for repositories under https:\/\/git.example.com\/org, not https:\/\/evil.com\/org\/repo.git/,
    );
    expect(() => gitCredentialsFor(s, 'https://git.example.com@evil.com/org/repo.git')).toThrow(/user info/);
    try {
      gitCredentialsFor(s, 'https://git.example.com/other/repo.git');
      expect.unreachable();
    } catch (e) {
      expect((e as { reason: string }).reason).toBe('CredentialsNotAllowed');
    }
    expect(() => gitCredentialsFor(secret({ password: 'tok' }), 'https://git.example.com/org/r.git')).toThrow(
      /must name the repository URL prefix/,
    );
    expect(() =>
      gitCredentialsFor(
        secret({ password: 't', url: 'https://a.example.com/' }, { [GIT_URL_ANNOTATION]: 'https://b.example.com/' }),
        'https://a.example.com/r.git',
      ),
    ).toThrow(/two different URL prefixes/);
    expect(() =>
      gitCredentialsFor(secret({ username: 'u', url: 'https://git.example.com/' }), 'https://git.example.com/r.git'),
    ).toThrow(/has no password/);
  });
});
