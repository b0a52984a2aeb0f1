import { describe, expect, it } from 'vitest';
import {
  type CredentialSecretMeta,
  credentialRefusal,
  parseDestination,
  parseDestinations,
} from './credentialPolicy.js';

const use = {
  field: 'spec.webhook.headersSecretRef',
  owner: 'Notification team-a/n',
  destinationField: 'spec.webhook.url',
};
const where = 'Secret team-a/s (spec.webhook.headersSecretRef of Notification team-a/n)';
const secret = (destinations?: string, label: string | null = 'true'): CredentialSecretMeta => ({
  namespace: 'team-a',
  name: 's',
  labels: label === null ? {} : { 'promotions.kpromo.dev/credential': label },
  annotations: destinations === undefined ? {} : { 'promotions.kpromo.dev/destinations': destinations },
});
const allowed = (destinations: string, url: string) => credentialRefusal(secret(destinations), use, url) === undefined;

describe('credentialRefusal: the Secret owner says whether and where', () => {
  it('refuses a Secret without the label (or with another value), suggesting the destination', () => {
    for (const s of [secret('hooks.example.com', null), secret('hooks.example.com', 'yes')])
      expect(credentialRefusal(s, use, 'https://hooks.example.com/in')).toBe(
        `${where} is not marked as a credential kpromo may send: its owner must label it promotions.kpromo.dev/credential=true and list where it may go in annotation promotions.kpromo.dev/destinations (e.g. "hooks.example.com")`,
      );
  });

  it('refuses a labelled Secret without destinations, unless the caller matches hosts itself', () => {
    const msg = `${where} names no destinations: its owner must list where it may go in annotation promotions.kpromo.dev/destinations (e.g. "http://10.0.0.5:8080/")`;
    expect(credentialRefusal(secret(), use, 'http://10.0.0.5:8080/x')).toBe(msg);
    expect(credentialRefusal(secret(' , '), use, 'http://10.0.0.5:8080/x')).toBe(msg);
    expect(credentialRefusal(secret(), use, 'http://10.0.0.5:8080/x', { destinationsOptional: true })).toBeUndefined();
    // Optional means absent; a present annotation still restricts, and the label is still required.
    expect(
      credentialRefusal(secret('a.example.com'), use, 'https://b.example.com', { destinationsOptional: true }),
    ).toMatch(/may be sent only to a\.example\.com, not to https:\/\/b\.example\.com/);
    expect(
      credentialRefusal(secret(undefined, null), use, 'https://b.example.com', { destinationsOptional: true }),
    ).toMatch(/is not marked as a credential/);
  });

  it('says where it may go, where it was about to go and what the owner would add; origin only', () => {
    expect(
      credentialRefusal(
        secret('a.example.com, https://b.example.com/x/'),
        use,
        'https://evil.example.com/T/B/tok?sig=1',
      ),
    ).toBe(
      `${where} may be sent only to a.example.com, https://b.example.com/x/, not to https://evil.example.com (spec.webhook.url); if it should go there, its owner adds "evil.example.com" to annotation promotions.kpromo.dev/destinations`,
    );
  });

  it('checks only the label and the annotation when the URL is not known yet', () => {
    expect(credentialRefusal(secret('a.example.com'), use, undefined)).toBeUndefined();
    expect(credentialRefusal(secret(), use, undefined)).toBe(
      `${where} names no destinations: its owner must list where it may go in annotation promotions.kpromo.dev/destinations`,
    );
  });

  it('a bare host means https on its port (443 unless named), never plain http', () => {
    expect(allowed('hooks.example.com', 'https://hooks.example.com/a/b?x=1')).toBe(true);
    expect(allowed('hooks.example.com', 'https://HOOKS.example.com:443/')).toBe(true);
    expect(allowed('hooks.example.com', 'http://hooks.example.com/')).toBe(false);
    expect(allowed('hooks.example.com', 'https://hooks.example.com:8443/')).toBe(false);
    expect(allowed('hooks.example.com:8443', 'https://hooks.example.com:8443/')).toBe(true);
    expect(allowed('hooks.example.com:8443', 'https://hooks.example.com/')).toBe(false);
    expect(allowed('hooks.example.com', 'https://hooks.example.com.evil.io/')).toBe(false);
    expect(allowed('hooks.example.com', 'https://evil.io/?hooks.example.com')).toBe(false);
    // userinfo does not change where the request goes: the host after @ is what counts.
    expect(allowed('hooks.example.com', 'https://hooks.example.com@evil.io/')).toBe(false);
    expect(allowed('hooks.example.com', 'https://hooks.example.com./')).toBe(false);
    expect(allowed('[::1]:8443', 'https://[::1]:8443/x')).toBe(true);
  });

  it('*.example.com matches one more label only', () => {
    expect(allowed('*.example.com', 'https://a.example.com/')).toBe(true);
    expect(allowed('*.example.com', 'https://a.b.example.com/')).toBe(false);
    expect(allowed('*.example.com', 'https://example.com/')).toBe(false);
    expect(allowed('*.example.com', 'https://aexample.com/')).toBe(false);
    expect(allowed('*.example.com', 'http://a.example.com/')).toBe(false);
    expect(allowed('http://*.example.com:8080/', 'http://a.example.com:8080/x')).toBe(true);
  });

  it('a URL prefix fixes scheme, host, port and leading path segments', () => {
    const p = 'http://127.0.0.1:8080/hooks/';
    expect(allowed(p, 'http://127.0.0.1:8080/hooks/kpromo')).toBe(true);
    expect(allowed(p, 'http://127.0.0.1:8080/hooks')).toBe(true);
    expect(allowed(p, 'http://127.0.0.1:8080/hooksx')).toBe(false);
    expect(allowed(p, 'http://127.0.0.1:8080/other')).toBe(false);
    expect(allowed(p, 'http://127.0.0.1:8080/hooks/../other')).toBe(false); // resolved to /other
    expect(allowed(p, 'http://127.0.0.1:8080/hooks/%2e%2e/other')).toBe(false); // resolved too
    expect(allowed(p, 'http://127.0.0.1:8080/hooks/..%2fother')).toBe(false); // encoded: never under a prefix
    expect(allowed(p, 'https://127.0.0.1:8080/hooks/x')).toBe(false);
    expect(allowed(p, 'http://127.0.0.1:8081/hooks/x')).toBe(false);
    expect(allowed('https://git.example.com/org', 'https://git.example.com/org/repo.git')).toBe(true);
    expect(allowed('https://git.example.com:443/org', 'https://git.example.com/org/repo.git')).toBe(true);
  });

  it('refuses non-http targets and malformed entries, naming the entry', () => {
    expect(credentialRefusal(secret('a.example.com'), use, 'ftp://a.example.com/')).toBe(
      `${where} is only sent over http(s), and spec.webhook.url is not an http(s) URL`,
    );
    expect(credentialRefusal(secret('a.example.com, ftp://x.example.com/'), use, 'https://a.example.com/')).toBe(
      `${where}: annotation promotions.kpromo.dev/destinations: entry "ftp://x.example.com/" is not http(s): credentials are sent over http(s) only`,
    );
  });
});

describe('parseDestination', () => {
  it('parses hosts, globs and URL prefixes', () => {
    expect(parseDestination(' Hooks.Example.com ')).toEqual({
      scheme: 'https',
      host: 'hooks.example.com',
      port: 443,
      segments: [],
      raw: 'Hooks.Example.com',
    });
    expect(parseDestination('http://10.0.0.5:8080/a/b/')).toMatchObject({
      scheme: 'http',
      port: 8080,
      segments: ['a', 'b'],
    });
    expect(parseDestination('*.example.com')).toMatchObject({ host: '*.example.com' });
  });

  it('refuses what could be read two ways', () => {
    for (const [entry, why] of [
      ['https://a.example.com@evil.io/', 'must not contain user info'],
      ['https://a.example.com/x?y=1', 'is not a host'],
      ['https://a.example.com/%2e%2e/', 'encoded'],
      ['https://a.example.com/a/../b', '".."'],
      ['*.com', 'two labels'],
      ['*', 'is not a host'],
      ['a.example.com:99999', 'invalid port'],
      ['https://a.example.com\\@evil.io/', 'user info'],
    ])
      expect(parseDestination(entry)).toEqual({ problem: expect.stringContaining(why) });
    expect(parseDestinations('a.example.com,,b.example.com')).toMatchObject({ destinations: [{}, {}] });
  });
});
