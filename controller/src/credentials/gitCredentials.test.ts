import { describe, expect, it } from 'vitest';
import { GIT_URL_ANNOTATION, gitCredentialsFor, normalizeGitUrl, urlHasPrefix } from './gitCredentials.js';
import type { SecretObject } from './secrets.js';

/** An opted-in git Secret for https://git.example.com/ (unless `annotations` or `labels` say otherwise). */
const secret = (
  data: Record<string, string>,
  annotations: Record<string, string> = {},
  labels: Record<string, string> = { 'promotions.kpromo.dev/credential': 'true' },
): SecretObject => ({
  namespace: 'team-a',
  name: 'git',
  type: 'kubernetes.io/basic-auth',
  data,
  labels,
  annotations: { 'promotions.kpromo.dev/destinations': 'https://git.example.com/', ...annotations },
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
  it('gives the credentials of an opted-in Secret for a repository its destinations allow', () => {
    const s = secret({ username: 'bot', password: 'tok' }, { 'promotions.kpromo.dev/destinations': 'git.example.com' });
    expect(gitCredentialsFor(s, 'https://git.example.com/any/repo.git')).toEqual({
      username: 'bot',
      password: 'tok',
      prefix: 'https://git.example.com/any/repo.git',
      url: 'https://git.example.com/any/repo.git',
    });
  });

  it('refuses a Secret that did not opt in, or whose destinations do not name the repository', () => {
    const field = 'Secret team-a/git (spec.delivery.git.credentialsSecretRef)';
    const reasonOf = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return [(e as { reason: string }).reason, (e as Error).message];
      }
      return undefined;
    };
    expect(
      reasonOf(() => gitCredentialsFor(secret({ password: 't' }, {}, {}), 'https://git.example.com/r.git')),
    ).toEqual([
      'CredentialsNotAllowed',
      `${field} is not marked as a credential kpromo may send: its owner must label it promotions.kpromo.dev/credential=true and list where it may go in annotation promotions.kpromo.dev/destinations (e.g. "git.example.com")`,
    ]);
    expect(
      reasonOf(() =>
        gitCredentialsFor(
          secret({ password: 't' }, { 'promotions.kpromo.dev/destinations': 'https://git.example.com/org/' }),
          'https://git.example.com/other/r.git',
        ),
      ),
    ).toEqual([
      'CredentialsNotAllowed',
      `${field} may be sent only to https://git.example.com/org/, not to https://git.example.com (spec.delivery.git.repository); if it should go there, its owner adds "git.example.com" to annotation promotions.kpromo.dev/destinations`,
    ]);
    // The older url annotation alone does not opt in.
    expect(
      reasonOf(() =>
        gitCredentialsFor(
          secret({ password: 't' }, { [GIT_URL_ANNOTATION]: 'https://git.example.com/' }, {}),
          'https://git.example.com/r.git',
        ),
      )?.[0],
    ).toBe('CredentialsNotAllowed');
  });

  it('gives the credentials for a repository under the older prefix in key url or the annotation', () => {
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

  it('refuses repositories outside the older prefix and userinfo tricks, naming the Secret', () => {
    const s = secret({ username: 'bot', password: 'tok', url: 'https://git.example.com/org/' });
    expect(() => gitCredentialsFor(s, 'https://git.example.com/evil/repo.git')).toThrow(
      /Secret team-a\/git is only for repositories under https:\/\/git.example.com\/org, not https:\/\/git.example.com\/evil\/repo.git/,
    );
    expect(() => gitCredentialsFor(s, 'https://evil.com/org/repo.git')).toThrow(/may be sent only to/);
    expect(() => gitCredentialsFor(s, 'https://git.example.com@evil.com/org/repo.git')).toThrow(/user info/);
    try {
      gitCredentialsFor(s, 'https://git.example.com/other/repo.git');
      expect.unreachable();
    } catch (e) {
      expect((e as { reason: string }).reason).toBe('CredentialsNotAllowed');
    }
    expect(() =>
      gitCredentialsFor(
        secret(
          { password: 't', url: 'https://a.example.com/' },
          { [GIT_URL_ANNOTATION]: 'https://b.example.com/', 'promotions.kpromo.dev/destinations': 'a.example.com' },
        ),
        'https://a.example.com/r.git',
      ),
    ).toThrow(/two different URL prefixes/);
    expect(() =>
      gitCredentialsFor(secret({ username: 'u', url: 'https://git.example.com/' }), 'https://git.example.com/r.git'),
    ).toThrow(/has no password/);
  });
});
