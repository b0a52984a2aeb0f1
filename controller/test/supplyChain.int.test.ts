// Verify before copy, carry the evidence, sign the promotion: a real controller promoting between
// the harness registries, images signed by the real cosign (built from its Go module), and cosign
// verifying in the target what kpromo carried and signed. No Fulcio or Rekor can run here: cosign
// signs with key pairs and without a transparency log, which is the mode kpromo's policy trusts.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROMOTION_PREDICATE_TYPE, type PromotionPlan } from '@kpromo/api';
import { cosign, cosignAttest, cosignKeyPair, cosignSign, needComponents, spdxDocument } from '@kpromo/test-harness';
import {
  applyCr,
  appOf,
  approveAsAdmin,
  deploymentImage,
  eventReasons,
  isTerminalPlan,
  twoStageWorld,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

await needComponents('cosign');

const APPS = ['signed', 'unsigned'];
const SPDX = 'https://spdx.dev/Document';
const world = twoStageWorld('sc', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: APPS,
  flow: {
    signaturePolicy: { keys: [{ name: 'build' }], attestations: [{ predicateType: SPDX }] },
    promotionAttestation: { signingKey: 'promotion' },
  },
});
const { ns: NS, appsNs: APPS_NS, repo: REPO, dev, stable, source, target } = world;
/** The controller's namespace: the platform's key Secrets (supplyChain), out of the tenant's reach. */
const PLATFORM_NS = world.namespace('platform');
const insecure = ['--allow-insecure-registry', '--allow-http-registry'];

let devDigest: Record<string, string> = {};
let keys: Awaited<ReturnType<typeof cosignKeyPair>>;
const signing = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const signingPub = signing.publicKey.export({ type: 'spki', format: 'pem' }).toString();

const secret = (name: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: PLATFORM_NS },
  stringData: data,
});

beforeAll(async () => {
  keys = await cosignKeyPair();
  await world.seed();
  ({ devDigest } = world);
  // The release pipeline signs `signed` and attests its SBOM; `unsigned` was pushed by hand.
  const image = `${source}/${REPO}/signed@${devDigest.signed}`;
  await cosignSign(keys, image);
  await cosignAttest(keys, image, 'spdxjson', spdxDocument('signed'));
  await dev.create(
    `/api/v1/namespaces/${PLATFORM_NS}/secrets`,
    secret('release-keys', { 'cosign.pub': readFileSync(keys.pub, 'utf8') }),
  );
  await dev.create(
    `/api/v1/namespaces/${PLATFORM_NS}/secrets`,
    secret('kpromo-signing', { 'key.pem': signing.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() }),
  );
  await world.start({
    supplyChain: {
      namespace: PLATFORM_NS,
      trustedKeys: [{ name: 'build', secret: 'release-keys', namespaces: [NS] }],
      signingKeys: [{ name: 'promotion', secret: 'kpromo-signing', namespaces: [NS] }],
    },
  });
}, 300_000);

afterAll(() => world.stop());

describe('only signed images move, with their evidence, and each promotion leaves a signed record', () => {
  let plan: PromotionPlan;

  it('shows each candidate signature state while the plan waits for approval', async () => {
    await applyCr(dev, {
      kind: 'PromotionPlan',
      metadata: { name: 'rel-1', namespace: NS },
      spec: {
        flow: 'main',
        from: 'dev',
        to: 'stable',
        candidates: APPS.map((a) => ({ application: a, from: { tag: 'v2.0.0', digest: devDigest[a] } })),
      },
    });
    plan = await waitPlan(dev, NS, 'rel-1', (p) => (p.status?.candidateSignatures?.length ?? 0) === 2, 60_000);
    expect(plan.status?.phase).toBe('Pending');
    const byApp = Object.fromEntries((plan.status?.candidateSignatures ?? []).map((s) => [s.application, s]));
    expect(byApp.signed).toMatchObject({ digest: devDigest.signed, verdict: 'Verified', mode: 'Enforce' });
    expect(byApp.signed.message).toBe(`signature by build, attestation ${SPDX} by build`);
    expect(byApp.unsigned).toMatchObject({ digest: devDigest.unsigned, verdict: 'Unsigned' });
  });

  it('promotes the signed image and refuses the unsigned one before any copy', async () => {
    await approveAsAdmin(dev, NS, 'rel-1');
    plan = await waitPlan(dev, NS, 'rel-1', isTerminalPlan, 180_000);
    const ok = appOf(plan, 'signed')!;
    expect(ok).toMatchObject({ phase: 'Succeeded', signature: { verdict: 'Verified' } });
    expect(ok.attestation).toMatchObject({
      predicateType: PROMOTION_PREDICATE_TYPE,
      signedBy: 'promotion',
    });
    expect(await deploymentImage(stable, APPS_NS, 'signed')).toContain(devDigest.signed);

    const refused = appOf(plan, 'unsigned')!;
    expect(refused).toMatchObject({ phase: 'Failed', reason: 'SignaturePolicy', signature: { verdict: 'Unsigned' } });
    expect(refused.copied).not.toBe(true);
    expect(refused.message).toContain(
      'fails the signature policy for stable (PromotionFlow main): Unsigned: signature: none found',
    );
    expect(refused.message).toContain('nothing was copied');
    // Nothing of it reached stable: no new tag, the workload runs the old digest.
    await world.untouched('unsigned');
    expect(await eventReasons(dev, NS, 'rel-1')).toContain('PromotionAttested');
  });

  it('cosign verifies, in the target registry, the carried signature and SBOM and the promotion attestation', async () => {
    const image = `${target}/stable/${REPO}/signed@${devDigest.signed}`;
    const sig = await cosign(['verify', '--key', keys.pub, '--insecure-ignore-tlog', ...insecure, image], keys);
    expect(sig.code, sig.stderr).toBe(0);
    const sbom = await cosign(
      ['verify-attestation', '--key', keys.pub, '--insecure-ignore-tlog', '--type', 'spdxjson', ...insecure, image],
      keys,
    );
    expect(sbom.code, sbom.stderr).toBe(0);
    const pub = join(keys.dir, 'kpromo.pub');
    writeFileSync(pub, signingPub);
    const att = await cosign(
      [
        'verify-attestation',
        '--key',
        pub,
        '--insecure-ignore-tlog',
        '--type',
        PROMOTION_PREDICATE_TYPE,
        ...insecure,
        image,
      ],
      keys,
    );
    expect(att.code, att.stderr).toBe(0);
    const statement = JSON.parse(
      Buffer.from(JSON.parse(att.stdout.trim().split('\n')[0]).payload, 'base64').toString('utf8'),
    );
    expect(statement.predicate).toMatchObject({
      plan: { namespace: NS, name: 'rel-1', uid: plan.metadata.uid },
      flow: 'main',
      from: 'dev',
      to: 'stable',
      application: 'signed',
      source: { image: `${source}/${REPO}/signed@${devDigest.signed}`, tag: 'v2.0.0' },
      approvals: [{ user: 'kpromo-admin' }],
      sourceSignatures: { verdict: 'Verified', signedBy: ['build'] },
    });
    expect(statement.predicate.approvals[0].observedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });
});
