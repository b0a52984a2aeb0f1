import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  COSIGN_SIGN_PREDICATE_TYPE,
  PROMOTION_PREDICATE_TYPE,
  type PromotionPlan,
  type SignaturePolicy,
} from '@kpromo/api';
import {
  cosign,
  cosignAttest,
  cosignKeyPair,
  cosignSign,
  type LocalRegistry,
  needComponents,
  pushTestImage,
  spdxDocument,
  startRegistry,
} from '@kpromo/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Egress, setDefaultEgress } from '../net/guardedFetch.js';
import { copyImage } from '../oci/copyImage.js';
import { sha256Digest } from '../oci/manifest.js';
import { attachReferrer, MAX_EVIDENCE_COPIED } from '../oci/referrers.js';
import { RegistryClient } from '../oci/registryClient.js';
import { attestPromotion, type PromotionFacts } from './attestation.js';
import { SIGSTORE_BUNDLE_V03 } from './bundle.js';
import { bundlesAbout, checkSignatures, MAX_BUNDLES_READ } from './check.js';
import type { SigningKey, TrustedKey } from './keys.js';

await needComponents('cosign');

// cosign signs and verifies here exactly as in CI pipelines, with key pairs and without a
// transparency log (no Rekor or Fulcio can run here: --tlog-upload=false / --insecure-ignore-tlog).
const SPDX = 'https://spdx.dev/Document';
const loopbackAllowed = new Egress({ allowedCidrs: ['127.0.0.1/32'] });
let restoreEgress: () => void;
let src: LocalRegistry;
let dst: LocalRegistry;
let trusted: Awaited<ReturnType<typeof cosignKeyPair>>;
let stranger: Awaited<ReturnType<typeof cosignKeyPair>>;
let trustedKey: TrustedKey;
let strangerKey: TrustedKey;
const policy: SignaturePolicy = {
  keys: [{ name: 'release-keys' }],
  attestations: [{ predicateType: SPDX }],
};

const ref = (reg: LocalRegistry, repo: string, digest: string) => `${reg.host}/${repo}@${digest}`;
const insecure = ['--allow-insecure-registry', '--allow-http-registry'];

const sign = (keys: Awaited<ReturnType<typeof cosignKeyPair>>, image: string) => cosignSign(keys, image);
const attestSbom = (keys: Awaited<ReturnType<typeof cosignKeyPair>>, image: string) =>
  cosignAttest(keys, image, 'spdxjson', spdxDocument('app'));

beforeAll(async () => {
  restoreEgress = setDefaultEgress(loopbackAllowed);
  [src, dst, trusted, stranger] = await Promise.all([
    startRegistry({ name: 'sc-src' }),
    startRegistry({ name: 'sc-dst' }),
    cosignKeyPair(),
    cosignKeyPair('other-password'),
  ]);
  trustedKey = { name: 'release-keys/cosign.pub', key: createPublicKey(readFileSync(trusted.pub)) };
  strangerKey = { name: 'old-keys/cosign.pub', key: createPublicKey(readFileSync(stranger.pub)) };
}, 120_000);
afterAll(async () => {
  restoreEgress?.();
  await Promise.all([src?.stop(), dst?.stop(), loopbackAllowed.close()]);
});

describe('signature policy against images cosign signed', () => {
  it('verifies a cosign signature and SBOM attestation by a trusted key, also when it is the second key listed', async () => {
    const { digest } = await pushTestImage({ host: src.host, repository: 'team/signed', tag: 'v1.0.0' });
    await sign(trusted, ref(src, 'team/signed', digest));
    await attestSbom(trusted, ref(src, 'team/signed', digest));
    const client = new RegistryClient({ host: src.host });
    const state = await checkSignatures(client, 'team/signed', digest, policy, [strangerKey, trustedKey], new Date());
    expect(state).toMatchObject({ digest, verdict: 'Verified', mode: 'Enforce' });
    expect(state.checks).toEqual([
      { predicateType: COSIGN_SIGN_PREDICATE_TYPE, verified: true, signedBy: 'release-keys/cosign.pub' },
      { predicateType: SPDX, verified: true, signedBy: 'release-keys/cosign.pub' },
    ]);
  });

  it('calls an image without signatures Unsigned and one signed by another key Invalid, naming what is missing', async () => {
    const unsigned = await pushTestImage({ host: src.host, repository: 'team/unsigned', tag: 'v1.0.0' });
    const other = await pushTestImage({ host: src.host, repository: 'team/other', tag: 'v1.0.0' });
    await sign(stranger, ref(src, 'team/other', other.digest));
    const client = new RegistryClient({ host: src.host });
    const a = await checkSignatures(client, 'team/unsigned', unsigned.digest, policy, [trustedKey], new Date());
    expect(a.verdict).toBe('Unsigned');
    expect(a.message).toBe(`signature: none found; attestation ${SPDX}: none found`);
    const b = await checkSignatures(client, 'team/other', other.digest, policy, [trustedKey], new Date());
    expect(b.verdict).toBe('Invalid');
    expect(b.checks[0]).toMatchObject({
      verified: false,
      message: '1 found, none valid: not signed by a trusted key (release-keys/cosign.pub)',
    });
  });

  it('refuses a valid signature of another image attached to this one (replay)', async () => {
    const signed = await pushTestImage({ host: src.host, repository: 'team/replay', tag: 'v1.0.0' });
    const victim = await pushTestImage({ host: src.host, repository: 'team/replay', tag: 'v2.0.0' });
    await sign(trusted, ref(src, 'team/replay', signed.digest));
    const client = new RegistryClient({ host: src.host });
    const [sig] = await bundlesAbout(client, 'team/replay', signed.digest, [trustedKey]);
    expect(sig.ok).toBe(true);
    const bundle = (await (
      await fetch(`${src.url}/v2/team/replay/manifests/${sig.manifestDigest}`, {
        headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
      })
    ).json()) as { layers: Array<{ digest: string }> };
    const bytes = new Uint8Array(
      await (await fetch(`${src.url}/v2/team/replay/blobs/${bundle.layers[0].digest}`)).arrayBuffer(),
    );
    const head = await fetch(`${src.url}/v2/team/replay/manifests/${victim.digest}`, {
      method: 'HEAD',
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    await attachReferrer(
      client,
      'team/replay',
      {
        mediaType: head.headers.get('content-type')!,
        digest: victim.digest,
        size: Number(head.headers.get('content-length')),
      },
      {
        artifactType: SIGSTORE_BUNDLE_V03,
        layer: { mediaType: SIGSTORE_BUNDLE_V03, bytes },
      },
    );
    const state = await checkSignatures(
      client,
      'team/replay',
      victim.digest,
      { ...policy, attestations: [] },
      [trustedKey],
      new Date(),
    );
    expect(state.verdict).toBe('Invalid');
    expect(state.message).toContain(`signed for another image, not ${victim.digest}`);
  });
});

describe("cosign 2's tag scheme (.sig and .att), as cosign 3 writes it with --new-bundle-format=false", () => {
  const legacy = ['--new-bundle-format=false'];

  it('verifies a .sig signature and an .att attestation by a trusted key', async () => {
    const { digest } = await pushTestImage({ host: src.host, repository: 'team/legacy', tag: 'v1.0.0' });
    const image = ref(src, 'team/legacy', digest);
    await cosignSign(trusted, image, legacy);
    await cosignAttest(trusted, image, 'spdxjson', spdxDocument('legacy'), legacy);
    // Written under cosign's tags, not as referrers.
    const tags = (await (await fetch(`${src.url}/v2/team/legacy/tags/list`)).json()) as { tags: string[] };
    expect(tags.tags.sort()).toEqual(
      [`sha256-${digest.slice(7)}.att`, `sha256-${digest.slice(7)}.sig`, 'v1.0.0'].sort(),
    );
    const state = await checkSignatures(
      new RegistryClient({ host: src.host }),
      'team/legacy',
      digest,
      policy,
      [trustedKey],
      new Date(),
    );
    expect(state).toMatchObject({ verdict: 'Verified' });
    expect(state.message).toBe(`signature by release-keys/cosign.pub, attestation ${SPDX} by release-keys/cosign.pub`);
  });

  it("refuses another image's .sig copied under this image's tag, and a signature by another key", async () => {
    const signed = await pushTestImage({ host: src.host, repository: 'team/legacy2', tag: 'v1.0.0' });
    const victim = await pushTestImage({ host: src.host, repository: 'team/legacy2', tag: 'v2.0.0' });
    await cosignSign(trusted, ref(src, 'team/legacy2', signed.digest), legacy);
    const accept = { accept: 'application/vnd.oci.image.manifest.v1+json' };
    const sig = await fetch(`${src.url}/v2/team/legacy2/manifests/sha256-${signed.digest.slice(7)}.sig`, {
      headers: accept,
    });
    const bytes = new Uint8Array(await sig.arrayBuffer());
    const put = await fetch(`${src.url}/v2/team/legacy2/manifests/sha256-${victim.digest.slice(7)}.sig`, {
      method: 'PUT',
      headers: { 'content-type': sig.headers.get('content-type')! },
      body: bytes,
    });
    expect(put.status).toBe(201);
    const client = new RegistryClient({ host: src.host });
    const replay = await checkSignatures(
      client,
      'team/legacy2',
      victim.digest,
      { ...policy, attestations: [] },
      [trustedKey],
      new Date(),
    );
    expect(replay.verdict).toBe('Invalid');
    expect(replay.message).toContain(`signed for another image, not ${victim.digest}`);
    const other = await checkSignatures(
      client,
      'team/legacy2',
      signed.digest,
      { ...policy, attestations: [] },
      [strangerKey],
      new Date(),
    );
    expect(other.verdict).toBe('Invalid');
    expect(other.message).toContain('not signed by a trusted key (old-keys/cosign.pub)');
  });
});

describe('evidence and the promotion attestation in the target registry', () => {
  const signingKey = (): SigningKey => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    return {
      name: 'kpromo-signing/key.pem',
      privateKey,
      publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    };
  };
  const facts = (digest: string, uid: string): PromotionFacts => ({
    plan: {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'PromotionPlan',
      metadata: { namespace: 'team-a', name: 'rel-42', uid },
      spec: {
        flow: 'main',
        from: 'stable',
        to: 'prod',
        candidates: [],
        requestedBy: 'user:dev',
        approvals: [{ user: 'alice', groups: ['release-managers'] }],
      },
      status: {
        gate: {
          approved: true,
          required: 1,
          approvers: [{ user: 'alice', counted: true, observedAt: '2026-12-05T10:00:00Z' }],
        },
      },
    } as PromotionPlan,
    app: {
      application: 'shop',
      phase: 'Writing',
      digest,
      targetTag: 'v1.0.0-20261205',
      startedAt: '2026-12-05T10:01:00Z',
    },
    source: { host: src.host, repository: 'team/shop', tag: 'v1.0.0' },
    target: { host: dst.host, repository: 'prod/shop' },
    controllerVersion: '0.1.0',
  });

  it('carries signature and SBOM to the target, where cosign verifies them; signs a promotion attestation cosign verifies too', async () => {
    const { digest } = await pushTestImage({ host: src.host, repository: 'team/shop', tag: 'v1.0.0' });
    await sign(trusted, ref(src, 'team/shop', digest));
    await attestSbom(trusted, ref(src, 'team/shop', digest));
    const copied = await copyImage({
      source: { host: src.host, repository: 'team/shop', reference: digest },
      target: { host: dst.host, repository: 'prod/shop', tag: 'v1.0.0-20261205' },
      expectedDigest: digest,
    });
    expect(copied.evidence).toBe(2);
    const target = ref(dst, 'prod/shop', digest);
    const v = await cosign(['verify', '--key', trusted.pub, '--insecure-ignore-tlog', ...insecure, target], trusted);
    expect(v.code, v.stderr).toBe(0);
    const va = await cosign(
      ['verify-attestation', '--key', trusted.pub, '--insecure-ignore-tlog', '--type', 'spdxjson', ...insecure, target],
      trusted,
    );
    expect(va.code, va.stderr).toBe(0);

    const key = signingKey();
    const client = new RegistryClient({ host: dst.host });
    const first = await attestPromotion(client, facts(digest, 'uid-1'), key);
    // A retry (or another leader) finds it and signs nothing new.
    expect(await attestPromotion(client, facts(digest, 'uid-1'), key)).toBe(first);
    const pub = join(trusted.dir, 'kpromo.pub');
    writeFileSync(pub, key.publicKeyPem);
    const out = await cosign(
      [
        'verify-attestation',
        '--key',
        pub,
        '--insecure-ignore-tlog',
        '--type',
        PROMOTION_PREDICATE_TYPE,
        ...insecure,
        target,
      ],
      trusted,
    );
    expect(out.code, out.stderr).toBe(0);
    const envelope = JSON.parse(out.stdout.trim().split('\n')[0]) as { payload: string };
    const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
    expect(statement).toMatchObject({
      predicateType: PROMOTION_PREDICATE_TYPE,
      subject: [{ name: `${dst.host}/prod/shop`, digest: { sha256: digest.slice(7) } }],
      predicate: {
        plan: { namespace: 'team-a', name: 'rel-42', uid: 'uid-1' },
        from: 'stable',
        to: 'prod',
        requestedBy: 'user:dev',
        approvals: [{ user: 'alice', groups: ['release-managers'], observedAt: '2026-12-05T10:00:00Z' }],
      },
    });
    // Another key's public half does not verify it.
    writeFileSync(pub, signingKey().publicKeyPem);
    const wrong = await cosign(
      [
        'verify-attestation',
        '--key',
        pub,
        '--insecure-ignore-tlog',
        '--type',
        PROMOTION_PREDICATE_TYPE,
        ...insecure,
        target,
      ],
      trusted,
    );
    expect(wrong.code).not.toBe(0);
  });
});

/** Pushes a blob to a local registry (monolithic upload); its digest. */
async function pushRawBlob(reg: LocalRegistry, repo: string, bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = sha256Digest(bytes);
  const start = await fetch(`${reg.url}/v2/${repo}/blobs/uploads/`, { method: 'POST' });
  const url = new URL(start.headers.get('location')!, reg.url);
  url.searchParams.set('digest', digest);
  const put = await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: bytes });
  if (put.status !== 201) throw new Error(`blob upload answered ${put.status}`);
  return digest;
}

/**
 * What anyone who may push to `repo` can do: push `count` artifact manifests whose subject is
 * `digest` and list them in its fallback referrers index (the tag `sha256-<hex>`), ahead of what it
 * listed before. Returns the number of entries the index lists afterwards.
 */
async function floodReferrers(
  reg: LocalRegistry,
  repo: string,
  digest: string,
  count: number,
  artifactType: string,
): Promise<number> {
  const accept = 'application/vnd.oci.image.manifest.v1+json';
  const head = await fetch(`${reg.url}/v2/${repo}/manifests/${digest}`, { method: 'HEAD', headers: { accept } });
  const subject = {
    mediaType: head.headers.get('content-type')!,
    digest,
    size: Number(head.headers.get('content-length')),
  };
  const empty = new TextEncoder().encode('{}');
  const config = await pushRawBlob(reg, repo, empty);
  const layerBytes = new TextEncoder().encode('{"junk":true}');
  const layer = await pushRawBlob(reg, repo, layerBytes);
  const junk = [];
  for (let i = 0; i < count; i++) {
    const bytes = new TextEncoder().encode(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: accept,
        artifactType,
        config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: config, size: empty.byteLength },
        layers: [{ mediaType: artifactType, digest: layer, size: layerBytes.byteLength }],
        subject,
        annotations: { n: String(i) },
      }),
    );
    const d = sha256Digest(bytes);
    const put = await fetch(`${reg.url}/v2/${repo}/manifests/${d}`, {
      method: 'PUT',
      headers: { 'content-type': accept },
      body: bytes,
    });
    if (put.status !== 201) throw new Error(`manifest push answered ${put.status}`);
    junk.push({ mediaType: accept, digest: d, size: bytes.byteLength, artifactType });
  }
  const tag = `${reg.url}/v2/${repo}/manifests/sha256-${digest.slice(7)}`;
  const index = 'application/vnd.oci.image.index.v1+json';
  const before = await fetch(tag, { headers: { accept: index } });
  const listed = before.status === 200 ? ((await before.json()) as { manifests: object[] }).manifests : [];
  const manifests = [...junk, ...listed];
  const put = await fetch(tag, {
    method: 'PUT',
    headers: { 'content-type': index },
    body: JSON.stringify({ schemaVersion: 2, mediaType: index, manifests }),
  });
  if (put.status !== 201) throw new Error(`index push answered ${put.status}`);
  return manifests.length;
}

describe('junk referrers pushed onto a source digest', () => {
  it('an attacker who may push to the source repository floods a signed digest with junk referrers (some typed as Sigstore bundles): the copy still goes through, the signature is found behind them and carried to the target', async () => {
    const { digest } = await pushTestImage({ host: src.host, repository: 'team/flooded', tag: 'v1.0.0' });
    await sign(trusted, ref(src, 'team/flooded', digest));
    // Behind the junk in the index: 150 of another type and 3 that claim to be Sigstore bundles.
    await floodReferrers(src, 'team/flooded', digest, 3, SIGSTORE_BUNDLE_V03);
    const total = await floodReferrers(src, 'team/flooded', digest, 150, 'application/vnd.example.junk.v1+json');
    expect(total).toBe(154);
    const sigPolicy = { ...policy, attestations: [] };
    const atSource = await checkSignatures(
      new RegistryClient({ host: src.host }),
      'team/flooded',
      digest,
      sigPolicy,
      [trustedKey],
      new Date(),
    );
    expect(atSource).toMatchObject({ verdict: 'Verified' });

    const copied = await copyImage({
      source: { host: src.host, repository: 'team/flooded', reference: digest },
      target: { host: dst.host, repository: 'prod/flooded', tag: 'v1.0.0' },
      expectedDigest: digest,
    });
    expect(copied.digest).toBe(digest);
    // Bounded: the Sigstore bundles first, then others up to the cap; the rest is left and counted.
    expect(copied.evidence).toBe(MAX_EVIDENCE_COPIED);
    expect(copied.evidenceSkipped).toBe(total - MAX_EVIDENCE_COPIED);
    const atTarget = await checkSignatures(
      new RegistryClient({ host: dst.host }),
      'prod/flooded',
      digest,
      sigPolicy,
      [trustedKey],
      new Date(),
    );
    expect(atTarget).toMatchObject({ verdict: 'Verified' });
    const v = await cosign(
      ['verify', '--key', trusted.pub, '--insecure-ignore-tlog', ...insecure, ref(dst, 'prod/flooded', digest)],
      trusted,
    );
    expect(v.code, v.stderr).toBe(0);
  });

  it('more junk claiming to be Sigstore bundles than kpromo reads, ahead of the signature: the check fails closed and says why, the copy still goes through', async () => {
    const { digest } = await pushTestImage({ host: src.host, repository: 'team/flooded2', tag: 'v1.0.0' });
    await sign(trusted, ref(src, 'team/flooded2', digest));
    await floodReferrers(src, 'team/flooded2', digest, MAX_BUNDLES_READ + 6, SIGSTORE_BUNDLE_V03);
    const state = await checkSignatures(
      new RegistryClient({ host: src.host }),
      'team/flooded2',
      digest,
      { ...policy, attestations: [] },
      [trustedKey],
      new Date(),
    );
    expect(state.verdict).not.toBe('Verified');
    expect(state.message).toContain(
      `7 more referrer(s) that may be Sigstore bundles not read (kpromo reads ${MAX_BUNDLES_READ} per image); prune the junk referrers of ${digest}`,
    );
    const copied = await copyImage({
      source: { host: src.host, repository: 'team/flooded2', reference: digest },
      target: { host: dst.host, repository: 'prod/flooded2', tag: 'v1.0.0' },
      expectedDigest: digest,
    });
    expect(copied).toMatchObject({ digest, evidence: MAX_BUNDLES_READ + 7, evidenceSkipped: 0 });
  });
});
