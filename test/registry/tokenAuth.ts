import { execFileSync } from 'node:child_process';
import { createSign, randomUUID, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type LocalRegistry, startRegistry } from './registry.js';

/**
 * A real registry with `auth: token` plus a small token service (the Docker/distribution token
 * protocol: Basic credentials in, RS256 JWT with the granted `access` out), so clients' Bearer
 * challenge handling is tested against the registry's own token verification.
 */
export interface TokenAuthRegistry extends LocalRegistry {
  tokenRequests: Array<{ scopes: string[]; user?: string }>;
  /** host:port of the token service (the Bearer realm): another host than the registry's. */
  realmHost: string;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

export async function startTokenAuthRegistry(users: Record<string, string>): Promise<TokenAuthRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-token-'));
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=kpromo-token',
    ],
    { stdio: 'ignore' },
  );
  const privateKey = readFileSync(key, 'utf8');
  const certDer = new X509Certificate(readFileSync(cert)).raw.toString('base64');
  const tokenRequests: TokenAuthRegistry['tokenRequests'] = [];

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const scopes = url.searchParams.getAll('scope');
    const auth = req.headers.authorization;
    const [user, pass] = auth?.startsWith('Basic ') ? Buffer.from(auth.slice(6), 'base64').toString().split(':') : [];
    tokenRequests.push({ scopes, user });
    if (!user || users[user] !== pass) {
      res.writeHead(401).end('{"details":"bad credentials"}');
      return;
    }
    const now = Math.floor(Date.now() / 1000);
    const access = scopes.map((s) => {
      const [type, name, actions] = s.split(':');
      return { type, name, actions: actions.split(',') };
    });
    const header = { alg: 'RS256', typ: 'JWT', x5c: [certDer] };
    const claims = {
      iss: 'kpromo-test',
      sub: user,
      aud: 'kpromo-registry',
      exp: now + 300,
      nbf: now - 10,
      iat: now,
      jti: randomUUID(),
      access,
    };
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
    const sig = createSign('RSA-SHA256').update(input).sign(privateKey);
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ token: `${input}.${b64url(sig)}`, expires_in: 300 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const realm = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  const registry = await startRegistry({
    name: 'registry-token',
    extraConfig: [
      'auth:',
      '  token:',
      `    realm: ${realm}`,
      '    service: kpromo-registry',
      '    issuer: kpromo-test',
      `    rootcertbundle: ${cert}`,
    ].join('\n'),
  });
  return {
    ...registry,
    tokenRequests,
    realmHost: new URL(realm).host,
    async stop() {
      await registry.stop();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
