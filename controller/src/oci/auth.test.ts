import { describe, expect, it } from 'vitest';
import { basicAuth, parseChallenge, tokenUrl } from './auth.js';

describe('registry auth helpers', () => {
  it('parses a Bearer challenge with quoted params', () => {
    const c = parseChallenge(
      'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"',
    );
    expect(c).toEqual({
      scheme: 'bearer',
      params: {
        realm: 'https://auth.docker.io/token',
        service: 'registry.docker.io',
        scope: 'repository:library/nginx:pull',
      },
    });
    expect(parseChallenge('Basic realm="Registry Realm"')?.scheme).toBe('basic');
    expect(parseChallenge(null)).toBeUndefined();
  });

  it('builds the token URL with one scope parameter per scope', () => {
    const url = new URL(
      tokenUrl({ realm: 'https://t.example/token?x=1', service: 'reg' }, [
        'repository:a:pull',
        'repository:b:pull,push',
      ]),
    );
    expect(url.searchParams.get('x')).toBe('1');
    expect(url.searchParams.get('service')).toBe('reg');
    expect(url.searchParams.getAll('scope')).toEqual(['repository:a:pull', 'repository:b:pull,push']);
  });

  it('encodes basic credentials', () => {
    expect(basicAuth('u', 'p:w')).toBe(`Basic ${Buffer.from('u:p:w').toString('base64')}`);
  });
});
