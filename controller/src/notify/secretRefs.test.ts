import { describe, expect, it } from 'vitest';
import type { SecretObject } from '../credentials/secrets.js';
import { tokenDestinationProblem } from './secretRefs.js';

const secret = (named?: {
  key?: string;
  annotation?: string;
}): Pick<SecretObject, 'namespace' | 'name' | 'data' | 'annotations'> => ({
  namespace: 'team-a',
  name: 'tok',
  data: named?.key ? { token: 't', url: named.key } : { token: 't' },
  annotations: named?.annotation ? { 'promotions.kpromo.dev/url': named.annotation } : {},
});
const DEFAULT = 'https://api.github.com';

describe('tokenDestinationProblem (where a Notification may send a Secret token)', () => {
  it('allows the public API when the Secret names no URL', () => {
    expect(tokenDestinationProblem(secret(), 'https://api.github.com/', DEFAULT, 'spec.github.apiURL')).toBeUndefined();
  });

  it('refuses any other API unless the Secret names it', () => {
    expect(tokenDestinationProblem(secret(), 'https://evil.example.com', DEFAULT, 'spec.github.apiURL')).toBe(
      'spec.github.apiURL https://evil.example.com/ is not https://api.github.com/: Secret team-a/tok must name it (key "url" or annotation promotions.kpromo.dev/url) before its token is sent there',
    );
    const ghes = secret({ annotation: 'https://ghe.example.com/api/v3' });
    expect(tokenDestinationProblem(ghes, 'https://ghe.example.com/api/v3', DEFAULT, 'f')).toBeUndefined();
    expect(
      tokenDestinationProblem(
        secret({ key: 'https://ghe.example.com/' }),
        'https://ghe.example.com/api/v3',
        DEFAULT,
        'f',
      ),
    ).toBeUndefined();
  });

  it('holds a Secret that names a URL to it, the public API included', () => {
    const ghes = secret({ annotation: 'https://ghe.example.com/api/v3' });
    expect(tokenDestinationProblem(ghes, DEFAULT, DEFAULT, 'spec.github.apiURL')).toBe(
      'Secret team-a/tok allows its token to be sent under https://ghe.example.com/api/v3 only, not to spec.github.apiURL https://api.github.com/',
    );
    expect(tokenDestinationProblem(ghes, 'https://ghe.example.com.evil.io/api/v3', DEFAULT, 'f')).toMatch(/only/);
    expect(tokenDestinationProblem(ghes, 'http://ghe.example.com/api/v3', DEFAULT, 'f')).toMatch(/only/);
  });
});
