// The key Secrets a signature policy and a promotion attestation name, read from the real dev
// apiserver: only Secrets their owner labelled for kpromo are read, and a private key is never
// accepted where a public one belongs (nor the other way round).
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { signingKey, trustedKeys } from '../../src/supplychain/keys.js';
import { deleteNs, ensureNs, restFor } from '../e2eHelpers.js';

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `keys-${RUN}`;
const dev = restFor(inject('kubeconfig'), 'dev');
const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const PUBLIC = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const PRIVATE = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

const secret = (name: string, data: Record<string, string>, labelled: boolean) =>
  dev.create(`/api/v1/namespaces/${NS}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: NS, ...(labelled ? { labels: { 'promotions.kpromo.dev/credential': 'true' } } : {}) },
    stringData: data,
  });
const policy = (name: string) => ({ keys: [{ secretRef: { name } }] }) as Parameters<typeof trustedKeys>[2];

beforeAll(async () => {
  await ensureNs(dev, NS);
  await secret('release-keys', { 'cosign.pub': PUBLIC, 'key.pem': PRIVATE }, true);
  await secret('unlabelled', { 'cosign.pub': PUBLIC, 'key.pem': PRIVATE }, false);
  await secret('private-as-public', { 'cosign.pub': PRIVATE }, true);
  await secret('public-as-private', { 'key.pem': PUBLIC }, true);
});
afterAll(() => deleteNs(dev, NS));

describe('supply-chain key Secrets', () => {
  it('reads a labelled public key and a labelled signing key', async () => {
    const [k] = await trustedKeys(dev, NS, policy('release-keys'));
    expect(k.name).toBe('release-keys/cosign.pub');
    expect(k.key.export({ type: 'spki', format: 'pem' })).toBe(PUBLIC);
    const s = await signingKey(dev, NS, { name: 'release-keys' });
    expect(s.publicKeyPem).toBe(PUBLIC);
  });

  it('refuses a Secret its owner did not label for kpromo, for a policy key and for the signing key', async () => {
    const message = `Secret ${NS}/unlabelled (signature policy key) is not marked for kpromo's use: its owner must label it promotions.kpromo.dev/credential=true`;
    await expect(trustedKeys(dev, NS, policy('unlabelled'))).rejects.toMatchObject({ message });
    await expect(signingKey(dev, NS, { name: 'unlabelled' })).rejects.toMatchObject({
      message: expect.stringContaining(`Secret ${NS}/unlabelled (promotion attestation signing key) is not marked`),
    });
  });

  it('refuses a private key stored as a policy key, and a public key as the signing key, without echoing either', async () => {
    const e = await trustedKeys(dev, NS, policy('private-as-public')).catch((x: Error) => x);
    expect((e as Error).message).toBe(
      `Secret ${NS}/private-as-public (signature policy key) key "cosign.pub" is not a PEM public key: it holds a private key; store the public key (cosign.pub) instead`,
    );
    const s = await signingKey(dev, NS, { name: 'public-as-private' }).catch((x: Error) => x);
    expect((s as Error).message).toContain(
      `Secret ${NS}/public-as-private (promotion attestation signing key) key "key.pem" is not an unencrypted PEM private key`,
    );
    for (const m of [(e as Error).message, (s as Error).message]) {
      expect(m).not.toContain('BEGIN');
    }
  });
});
