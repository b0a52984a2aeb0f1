import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuthError, Authenticator, loadStaticTokens } from '../src/auth/authenticator.js';
import { loadConfig } from '../src/config.js';
import { McpConfigSchema } from '../src/mcp/config.js';
import { clip, REDACTED, redactDeep, redactMap } from '../src/mcp/redact.js';

const file = (name: string, text: string) => {
  const p = join(tmpdir(), `mcp-unit-${process.pid}-${name}`);
  writeFileSync(p, text);
  return p;
};

describe('mcp config', () => {
  it('is read-only and disabled by default, and part of the controller config', () => {
    const c = loadConfig({ env: {} });
    expect(c.mcp).toMatchObject({ enabled: false, write: false, path: '/mcp', port: 8090 });
    // Authentication is shared by the JSON API and MCP: TokenReview for the kpromo audience only.
    expect(c.auth).toEqual({ tokenReview: true, tokenAudiences: ['kpromo'], anonymousMetrics: false });
    expect(c.server.host).toBe('127.0.0.1');
    const e = loadConfig({ env: { KPROMO_MCP_ENABLED: 'true', KPROMO_MCP_WRITE: '1', KPROMO_MCP_PORT: '9000' } });
    expect(e.mcp).toMatchObject({ enabled: true, write: true, port: 9000 });
  });
  it('rejects unknown keys and bad values with the path', () => {
    expect(() => McpConfigSchema.parse({ writable: true })).toThrow(/writable/);
    expect(() => loadConfig({ env: {}, flags: { mcp: { path: 'mcp' } } })).toThrow(/mcp\.path/);
    // "Any token" is never accepted: an empty audience list is a configuration error.
    expect(() => loadConfig({ env: {}, flags: { auth: { tokenAudiences: [] } } })).toThrow(
      /auth\.tokenAudiences.*never any token/,
    );
  });
});

describe('static tokens', () => {
  it('authenticates known tokens in constant time and rejects others without TokenReview', async () => {
    const f = file('ok.yaml', 'tokens:\n  - token: abcdefghijklmnop1234\n    username: alice\n    groups: [ops]\n');
    const a = new Authenticator({ staticTokens: loadStaticTokens(f), tokenReview: false });
    await expect(a.authenticate('abcdefghijklmnop1234')).resolves.toMatchObject({
      username: 'alice',
      groups: ['ops'],
      source: 'static',
    });
    await expect(a.authenticate('abcdefghijklmnop1235')).rejects.toBeInstanceOf(AuthError);
  });
  it('reports a bad tokens file clearly', () => {
    expect(() => loadStaticTokens(file('short.yaml', 'tokens:\n  - token: short\n    username: bob\n'))).toThrow(
      /tokens\.0\.token: static tokens must be at least 16 characters/,
    );
    expect(() => loadStaticTokens('/nonexistent/tokens.yaml')).toThrow(/static tokens file \/nonexistent/);
  });
});

describe('redaction', () => {
  it('masks secret-looking keys, keeps the rest verbatim', () => {
    expect(
      redactMap({
        'kpromo.dev/api-token': 'x',
        'vault.io/secret-path': 'y',
        password: 'z',
        'app.kubernetes.io/name': 'n',
      }),
    ).toEqual({
      'kpromo.dev/api-token': REDACTED,
      'vault.io/secret-path': REDACTED,
      password: REDACTED,
      'app.kubernetes.io/name': 'n',
    });
    expect(redactDeep({ a: [{ clientSecret: 's', b: 1 }], authorization: 'Bearer t' })).toEqual({
      a: [{ clientSecret: REDACTED, b: 1 }],
      authorization: REDACTED,
    });
    expect(clip('x'.repeat(2000))?.length).toBe(1025);
  });
});
