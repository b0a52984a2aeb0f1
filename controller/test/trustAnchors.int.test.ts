// Trust anchors where tenants cannot reach, attacked by tenants with ordinary Secret rights in their
// own namespace, on the real control plane (admission policies installed) with a real controller,
// images signed by the real cosign and promoted between the harness registries. The keys a
// signature policy trusts and the key promotions are signed with live in the platform's namespace,
// named by the controller config (supplyChain); a flow names them, and only namespaces the config
// lists may use them.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROMOTION_PREDICATE_TYPE } from '@kpromo/api';
import { cosign, cosignKeyPair, cosignSign, needComponents, waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  appOf,
  approveAsAdmin,
  deploymentImage,
  grantRole,
  isTerminalPlan,
  rejection,
  testClusterAccess,
  twoStageWorld,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

await needComponents('cosign');

/** Tenant A: its control namespace NS is the one the platform's keys are configured for. */
const world = twoStageWorld('ta', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: ['forged', 'genuine'],
});
const { ns: NS, appsNs: APPS_NS, repo: REPO, dev, stable, source, target, as } = world;
/** Tenant B: no key is configured for its control namespace NS_B. */
const tenantB = world.release('b', { apps: ['borrowed'] });
const { ns: NS_B, appsNs: APPS_NS_B, repo: REPO_B } = tenantB;
/** The controller's own namespace, where the platform keeps the key Secrets. */
const PLATFORM_NS = world.namespace('platform');
const insecure = ['--allow-insecure-registry', '--allow-http-registry'];

/** A tenant of NS: reads and writes every Secret of their namespace, nothing elsewhere. */
const tenant = world.user('tenant');

let ctl: Running;
let build: Awaited<ReturnType<typeof cosignKeyPair>>;
let attacker: Awaited<ReturnType<typeof cosignKeyPair>>;
let digestA: Record<string, string> = {};
let oldA: Record<string, string> = {};
let digestB: Record<string, string> = {};
let oldB: Record<string, string> = {};
const signing = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const signingPem = signing.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const signingPub = signing.publicKey.export({ type: 'spki', format: 'pem' }).toString();

const secret = (ns: string, name: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: ns, labels: { 'promotions.kpromo.dev/credential': 'true' } },
  stringData: data,
});

const flow = (ns: string, spec: object) =>
  applyCr(dev, {
    kind: 'PromotionFlow',
    metadata: { name: 'main', namespace: ns },
    spec: {
      stages: [{ environment: 'dev' }, { environment: 'stable' }],
      selector: { applications: ['*'] },
      rolloutTimeoutSeconds: 120,
      ...spec,
    },
  });

const plan = (ns: string, name: string, app: string, digest: string) =>
  applyCr(dev, {
    kind: 'PromotionPlan',
    metadata: { name, namespace: ns },
    spec: {
      flow: 'main',
      from: 'dev',
      to: 'stable',
      candidates: [{ application: app, from: { tag: 'v2.0.0', digest } }],
    },
  });

async function promote(ns: string, name: string, app: string, digest: string) {
  await plan(ns, name, app, digest);
  await waitPlan(dev, ns, name, (p) => p.status?.phase === 'Pending', 60_000);
  await approveAsAdmin(dev, ns, name);
  const p = await waitPlan(dev, ns, name, isTerminalPlan, 180_000);
  return appOf(p, app)!;
}

/** Nothing of `app` reached stable: no new tag in stable's registry, its workload runs the old digest. */
async function untouched(repo: string, appsNs: string, app: string, old: string) {
  const tags = (await (await fetch(`http://${target}/v2/stable/${repo}/${app}/tags/list`)).json()) as {
    tags: string[];
  };
  expect(tags.tags).toEqual(['v1.0.0']);
  expect(await deploymentImage(stable, appsNs, app)).toContain(old);
}

beforeAll(async () => {
  [build, attacker] = await Promise.all([cosignKeyPair(), cosignKeyPair('attacker-password')]);
  await world.seed();
  ({ devDigest: digestA, stableOld: oldA } = world);
  ({ devDigest: digestB, stableOld: oldB } = tenantB);
  // The release pipeline signs with the platform's build key; the tenant signs `forged` with their own.
  await cosignSign(build, `${source}/${REPO}/genuine@${digestA.genuine}`);
  await cosignSign(attacker, `${source}/${REPO}/forged@${digestA.forged}`);
  // B's image is signed with the platform's build key too: B just may not use that key.
  await cosignSign(build, `${source}/${REPO_B}/borrowed@${digestB.borrowed}`);

  // The platform's keys, in the controller's namespace, configured for NS only.
  await dev.create(
    `/api/v1/namespaces/${PLATFORM_NS}/secrets`,
    secret(PLATFORM_NS, 'kpromo-build-key', { 'cosign.pub': readFileSync(build.pub, 'utf8') }),
  );
  await dev.create(
    `/api/v1/namespaces/${PLATFORM_NS}/secrets`,
    secret(PLATFORM_NS, 'kpromo-promotion-key', { 'key.pem': signingPem }),
  );
  await flow(NS, {
    signaturePolicy: { keys: [{ name: 'build' }] },
    promotionAttestation: { signingKey: 'promotion' },
  });
  await flow(NS_B, { signaturePolicy: { keys: [{ name: 'build' }] } });
  await grantRole(
    dev,
    NS,
    'tenant-secrets',
    [
      {
        apiGroups: [''],
        resources: ['secrets'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
    ],
    [tenant],
  );
  ctl = await world.start({
    namespaces: [NS, NS_B],
    clusterAccess: testClusterAccess(NS, NS_B),
    supplyChain: {
      namespace: PLATFORM_NS,
      trustedKeys: [{ name: 'build', secret: 'kpromo-build-key', namespaces: [NS] }],
      signingKeys: [{ name: 'promotion', secret: 'kpromo-promotion-key', namespaces: [NS] }],
    },
  });
  await waitFor(
    'cache warm',
    async () =>
      [NS, NS_B].every(
        (ns) =>
          ctl.controller.cache.environments(ns).length === 2 &&
          ctl.controller.cache.environments(ns).every((e) => ctl.controller.cache.environmentSynced(e)) &&
          !!ctl.controller.cache.getFlow(ns, 'main')?.spec.signaturePolicy,
      ),
    60_000,
  );
}, 400_000);

afterAll(() => world.stop());

describe('trust anchors where tenants cannot reach', () => {
  it('a tenant who writes Secrets in their namespace swaps the trusted key for their own and signs an image with it: the image is still refused, nothing copied', async () => {
    const t = as(tenant);
    const mine = readFileSync(attacker.pub, 'utf8');
    // Every Secret the flow could be read from in their namespace now holds their key…
    for (const name of ['build', 'kpromo-build-key', 'release-keys'])
      await t.apply(`/api/v1/namespaces/${NS}/secrets/${name}`, secret(NS, name, { 'cosign.pub': mine }), 'tenant');
    // …and the platform's namespace is out of reach.
    const denied = await rejection(
      t.create(
        `/api/v1/namespaces/${PLATFORM_NS}/secrets`,
        secret(PLATFORM_NS, 'kpromo-build-key', { 'cosign.pub': mine }),
      ),
    );
    expect(denied.status).toBe(403);
    const ap = await promote(NS, 'forged-1', 'forged', digestA.forged);
    expect(ap).toMatchObject({ phase: 'Failed', reason: 'SignaturePolicy', signature: { verdict: 'Invalid' } });
    expect(ap.copied).not.toBe(true);
    expect(ap.message).toContain('not signed by a trusted key (build)');
    await untouched(REPO, APPS_NS, 'forged', oldA.forged);
  });

  it('a tenant who reads every Secret of their namespace does not obtain the promotion signing key, and the promotion is still signed with it', async () => {
    const t = as(tenant);
    const list = await t.get<{ items: Array<{ data?: Record<string, string> }> }>(`/api/v1/namespaces/${NS}/secrets`);
    const values = list.items.flatMap((s) =>
      Object.values(s.data ?? {}).map((v) => Buffer.from(v, 'base64').toString()),
    );
    expect(values.some((v) => v.includes('PRIVATE KEY'))).toBe(false);
    expect((await rejection(t.get(`/api/v1/namespaces/${PLATFORM_NS}/secrets/kpromo-promotion-key`))).status).toBe(403);

    const ap = await promote(NS, 'genuine-1', 'genuine', digestA.genuine);
    expect(ap).toMatchObject({
      phase: 'Succeeded',
      signature: { verdict: 'Verified' },
      attestation: { predicateType: PROMOTION_PREDICATE_TYPE, signedBy: 'promotion' },
    });
    const pub = join(build.dir, 'promotion.pub');
    writeFileSync(pub, signingPub);
    const image = `${target}/stable/${REPO}/genuine@${digestA.genuine}`;
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
      build,
    );
    expect(att.code, att.stderr).toBe(0);
  });

  it('a flow in namespace B naming a key configured only for namespace A is refused before anything is copied, naming the field, the key and what to configure', async () => {
    const ap = await promote(NS_B, 'borrowed-1', 'borrowed', digestB.borrowed);
    expect(ap).toMatchObject({ phase: 'Failed', reason: 'KeyNotAllowed' });
    expect(ap.copied).not.toBe(true);
    expect(ap.message).toContain(`PromotionFlow ${NS_B}/main signaturePolicy.keys[0].name`);
    expect(ap.message).toContain('trusted key "build" may not be used from namespace');
    expect(ap.message).toContain(`supplyChain.trustedKeys (name build) namespaces must match "${NS_B}"`);
    await untouched(REPO_B, APPS_NS_B, 'borrowed', oldB.borrowed);
  });

  it("a flow writer names a Secret of the flow's own namespace as trusted key or signing key: admission refuses it, saying how to migrate", async () => {
    const keys = await rejection(flow(NS_B, { signaturePolicy: { keys: [{ secretRef: { name: 'release-keys' } }] } }));
    expect(keys.status).toBe(422);
    expect(keys.message).toContain(
      "keys[].secretRef (a Secret of the flow's namespace) is no longer trusted: ask the platform admin to configure the key in the controller config supplyChain.trustedKeys and name it here as keys[].name",
    );
    expect(keys.message).toContain('Migrating from keys in the flow');
    const signing = await rejection(
      flow(NS_B, { promotionAttestation: { signingKeySecretRef: { name: 'kpromo-signing' } } }),
    );
    expect(signing.status).toBe(422);
    expect(signing.message).toContain(
      "promotionAttestation.signingKeySecretRef (a Secret of the flow's namespace) is no longer used",
    );
  });
});
