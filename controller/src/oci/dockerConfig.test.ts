import { describe, expect, it } from 'vitest';
import { credentialsFor, type DockerConfig, keyMatchesHost, parseDockerConfig } from './dockerConfig.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const cfg = (...keys: string[]): DockerConfig => ({
  auths: Object.fromEntries(keys.map((k) => [k, { username: `user-of-${k}`, password: 'pw' }])),
});
/** The key whose entry credentialsFor picks for image `host/repository`, or undefined. */
const pick = (keys: string[], host: string, repository = 'app') =>
  credentialsFor(cfg(...keys), host, repository)?.entry;

describe('credentialsFor: kubelet imagePullSecrets matching (kubernetes.io/docs/concepts/containers/images, pkg/credentialprovider)', () => {
  it.each([
    // Documented examples: a glob label matches exactly one label.
    ['*.kubernetes.io', 'abc.kubernetes.io', true],
    ['*.kubernetes.io', 'abc.def.kubernetes.io', false],
    ['*.kubernetes.io', 'kubernetes.io', false],
    ['*.*.kubernetes.io', 'abc.kubernetes.io', false],
    ['*.*.kubernetes.io', 'abc.def.kubernetes.io', true],
    ['prefix.*.io', 'prefix.kubernetes.io', true],
    ['*-good.kubernetes.io', 'prefix-good.kubernetes.io', true],
    ['*-good.kubernetes.io', 'prefix-bad.kubernetes.io', false],
    ['prefix.kubernetes.*', 'prefix.kubernetes.io', true],
    // Ports must be identical, in both directions.
    ['registry:5000', 'registry:5000', true],
    ['registry:5000', 'registry', false],
    ['registry', 'registry:5000', false],
    ['*.kubernetes.io:1111', 'prefix.kubernetes.io:1111', true],
    ['*.kubernetes.io:1111', 'prefix.kubernetes.io:1112', false],
    // Exact host, scheme in the key ignored, /v1/ and /v2/ mean the host.
    ['registry.example.com', 'registry.example.com', true],
    ['registry.example.com', 'evil.example.com', false],
    ['registry.example.com', 'registry.example.com.evil.io', false],
    ['https://registry.example.com', 'registry.example.com', true],
    ['http://registry.example.com/v2/', 'registry.example.com', true],
    ['https://index.docker.io/v1/', 'index.docker.io', true],
    // Host names compare case-insensitively.
    ['Registry.Example.COM', 'registry.example.com', true],
  ])('key %s for host %s: %s', (key, host, match) => {
    expect(pick([key], host)).toBe(match ? key : undefined);
    expect(keyMatchesHost(key, host)).toBe(match);
  });

  it('matches a key path as a prefix of the repository, by whole segments', () => {
    expect(pick(['my-registry.io/images'], 'my-registry.io', 'images')).toBe('my-registry.io/images');
    expect(pick(['my-registry.io/images'], 'my-registry.io', 'images/my-image')).toBe('my-registry.io/images');
    expect(pick(['my-registry.io/images'], 'my-registry.io', 'other/my-image')).toBeUndefined();
    // kubelet compares strings here (images-b would match); kpromo requires a segment boundary.
    expect(pick(['my-registry.io/images'], 'my-registry.io', 'images-b/my-image')).toBeUndefined();
    expect(pick(['*.sub.my-registry.io/images'], 'a.sub.my-registry.io', 'images/my-image')).toBe(
      '*.sub.my-registry.io/images',
    );
  });

  it('prefers the most specific key: longest path, then exact host over glob', () => {
    const keys = ['quay.io', 'quay.io/coreos', 'quay.io/coreos/etcd', '*.io'];
    expect(pick(keys, 'quay.io', 'coreos/etcd')).toBe('quay.io/coreos/etcd');
    expect(pick(keys, 'quay.io', 'coreos/flannel')).toBe('quay.io/coreos');
    expect(pick(keys, 'quay.io', 'other/x')).toBe('quay.io');
    expect(pick(['*.example.com', 'reg.example.com'], 'reg.example.com')).toBe('reg.example.com');
    expect(pick(['*.example.com', 'reg.example.com'], 'other.example.com')).toBe('*.example.com');
  });

  it('docker login keys for Docker Hub apply to docker.io and its token service, not elsewhere', () => {
    expect(pick(['https://index.docker.io/v1/'], 'docker.io', 'library/nginx')).toBe('https://index.docker.io/v1/');
    expect(pick(['https://index.docker.io/v1/'], 'auth.docker.io', '')).toBe('https://index.docker.io/v1/');
    expect(pick(['https://index.docker.io/v1/'], 'ghcr.io', 'x')).toBeUndefined();
  });

  it('decodes auth (base64 user:pass, wins over username/password), username/password and tokens', () => {
    const c: DockerConfig = {
      auths: {
        'a.io': { auth: b64('robot:s3:cret'), username: 'ignored', password: 'ignored' },
        'b.io': { username: 'u', password: 'p' },
        'c.io': { identitytoken: 'refresh-123', username: '<token>' },
        'd.io': { registrytoken: 'bearer-456' },
        'e.io': { auth: b64('robot:pw').replace(/=+$/, '') }, // unpadded base64 is accepted too
      },
    };
    expect(credentialsFor(c, 'a.io', 'x')?.auth).toEqual({ username: 'robot', password: 's3:cret' });
    expect(credentialsFor(c, 'b.io', 'x')?.auth).toEqual({ username: 'u', password: 'p' });
    expect(credentialsFor(c, 'c.io', 'x')?.auth).toEqual({ identityToken: 'refresh-123', username: '<token>' });
    expect(credentialsFor(c, 'd.io', 'x')?.auth).toEqual({ token: 'bearer-456' });
    expect(credentialsFor(c, 'e.io', 'x')?.auth).toEqual({ username: 'robot', password: 'pw' });
  });

  it('rejects unusable entries and malformed configs with what is wrong', () => {
    expect(() => credentialsFor({ auths: { 'a.io': { email: 'x@y' } } }, 'a.io', 'x')).toThrow(
      /"a.io" has no credentials/,
    );
    expect(() => credentialsFor({ auths: { 'a.io': { auth: b64('nocolon') } } }, 'a.io', 'x')).toThrow(
      /base64 of username:password/,
    );
    expect(() => parseDockerConfig('{')).toThrow(/not valid JSON/);
    expect(() => parseDockerConfig('{"a.io":{}}')).toThrow(/no "auths" object/);
    expect(() => parseDockerConfig('{"auths":{"a.io":{"password":1}}}')).toThrow(/password is not a string/);
    expect(parseDockerConfig('{"auths":{"a.io":{"auth":"eDp5"}}}').auths['a.io'].auth).toBe('eDp5');
  });
});
