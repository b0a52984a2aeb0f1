// The key Secrets a signature policy and a promotion attestation name, read from the real dev
// apiserver: only from the controller's namespace, as the platform configured them
// (supplyChain), never from the flow's namespace; and a private key is never accepted where a
// public one belongs (nor the other way round).
import { generateKeyPairSync } from 'node:crypto';
import { deleteNs, ensureNs, restFor } from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { signingKey, trustedKeys } from '../../src/supplychain/keys.js';
import { SupplyChainConfigSchema } from '../../src/supplychain/trustAnchors.js';

const RUN = Math.random().toString(36).slice(2, 7);
/** The controller's namespace, holding the platform's key Secrets. */
const PLATFORM = `keys-${RUN}`;
/** A tenant namespace, where flows live. */
const TENANT = `keys-tenant-${RUN}`;
const dev = restFor(inject('kubeconfig'), 'dev');
const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const PUBLIC = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const PRIVATE = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const OTHER_PUBLIC = other.publicKey.export({ type: 'spki', format: 'pem' }).toString();

const secret = (ns: string, name: string, data: Record<string, string>) =>
  dev.create(`/api/v1/namespaces/${ns}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: ns },
    stringData: data,
  });
const config = SupplyChainConfigSchema.parse({
  namespace: PLATFORM,
  trustedKeys: [
    { name: 'build', secret: 'release-keys', namespaces: [TENANT] },
    { name: 'private-as-public', secret: 'private-as-public', namespaces: [TENANT] },
    { name: 'missing', secret: 'not-there', namespaces: [TENANT] },
  ],
  signingKeys: [
    { name: 'promotion', secret: 'release-keys', namespaces: [TENANT] },
    { name: 'public-as-private', secret: 'public-as-private', namespaces: [TENANT] },
  ],
});
const FLOW = `${TENANT}/main`;
const FIELD = 'signaturePolicy';
const policy = (name: string) => ({ keys: [{ name }] });

beforeAll(async () => {
  for (const ns of [PLATFORM, TENANT]) await ensureNs(dev, ns);
  await secret(PLATFORM, 'release-keys', { 'cosign.pub': PUBLIC, 'key.pem': PRIVATE });
  await secret(PLATFORM, 'private-as-public', { 'cosign.pub': PRIVATE });
  await secret(PLATFORM, 'public-as-private', { 'key.pem': PUBLIC });
  // Same names in the tenant namespace, holding another key: never read.
  await secret(TENANT, 'release-keys', { 'cosign.pub': OTHER_PUBLIC });
  await secret(TENANT, 'not-there', { 'cosign.pub': OTHER_PUBLIC });
});
afterAll(async () => {
  for (const ns of [PLATFORM, TENANT]) await deleteNs(dev, ns);
});

describe('supply-chain key Secrets', () => {
  it("reads the configured public key and signing key from the controller's namespace, by their configured names", async () => {
    const [k] = await trustedKeys(dev, config, TENANT, FLOW, FIELD, policy('build'));
    expect(k.name).toBe('build');
    expect(k.key.export({ type: 'spki', format: 'pem' })).toBe(PUBLIC);
    const s = await signingKey(dev, config, TENANT, FLOW, { signingKey: 'promotion' });
    expect(s).toMatchObject({ name: 'promotion', publicKeyPem: PUBLIC });
  });

  it("never falls back to a Secret of the flow's namespace: a configured Secret missing from the controller's namespace is an error", async () => {
    await expect(trustedKeys(dev, config, TENANT, FLOW, FIELD, policy('missing'))).rejects.toMatchObject({
      reason: 'CredentialsNotFound',
      message: `Secret ${PLATFORM}/not-there (supplyChain.trustedKeys missing) not found; a platform admin must create it`,
    });
  });

  it('refuses a flow that names a Secret of its own namespace, before reading anything', async () => {
    const e = await trustedKeys(dev, config, TENANT, FLOW, FIELD, {
      keys: [{ secretRef: { name: 'release-keys' } }],
    }).catch((x: Error) => x);
    expect(e).toMatchObject({ reason: 'KeyInTenantNamespace' });
    expect((e as Error).message).toMatch(
      new RegExp(
        `^PromotionFlow ${FLOW} signaturePolicy\\.keys\\[0\\]\\.secretRef: names Secret ${TENANT}/release-keys`,
      ),
    );
    await expect(
      signingKey(dev, config, TENANT, FLOW, { signingKeySecretRef: { name: 'release-keys' } }),
    ).rejects.toMatchObject({ reason: 'KeyInTenantNamespace' });
  });

  it('refuses a private key stored as a policy key, and a public key as the signing key, without echoing either', async () => {
    const e = await trustedKeys(dev, config, TENANT, FLOW, FIELD, policy('private-as-public')).catch((x: Error) => x);
    expect((e as Error).message).toBe(
      `Secret ${PLATFORM}/private-as-public (supplyChain.trustedKeys private-as-public) key "cosign.pub" is not a PEM public key: it holds a private key; store the public key (cosign.pub) instead`,
    );
    const s = await signingKey(dev, config, TENANT, FLOW, { signingKey: 'public-as-private' }).catch((x: Error) => x);
    expect((s as Error).message).toContain(
      `Secret ${PLATFORM}/public-as-private (supplyChain.signingKeys public-as-private) key "key.pem" is not an unencrypted PEM private key`,
    );
    for (const m of [(e as Error).message, (s as Error).message]) {
      expect(m).not.toContain('BEGIN');
    }
  });
});
