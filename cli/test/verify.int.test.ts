// `kpromo verify` against a real registry, with images signed and attested by the real cosign
// (built from its Go module) and promotion attestations signed by kpromo's own signing code. The
// program runs in-process (buildProgram), as main.ts runs it, with its exit code from describeFailure.
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PromotionPlan } from '@kpromo/api';
import { attachReferrer, Egress, RegistryClient } from '@kpromo/controller/oci';
import {
  attestPromotion,
  type PromotionFacts,
  promotionStatement,
  SIGSTORE_BUNDLE_V03,
  type SigningKey,
  signStatement,
} from '@kpromo/controller/supplychain';
import {
  cosign,
  cosignAttest,
  cosignKeyPair,
  cosignSign,
  type LocalRegistry,
  needComponents,
  pushTestImage,
  startRegistry,
} from '@kpromo/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../src/exitCodes.js';
import { fingerprint } from '../src/verify.js';
import { runKpromo } from './inProcess.js';

await needComponents('cosign');

let reg: LocalRegistry;
let build: Awaited<ReturnType<typeof cosignKeyPair>>;
let dir: string;
const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const key: SigningKey = {
  name: 'kpromo-signing/key.pem',
  privateKey: pair.privateKey,
  publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
};
const insecure = ['--allow-insecure-registry', '--allow-http-registry'];
// The test's own writes to the loopback registry (the controller allows it only by egress.allowedCidrs).
const loopback = new Egress({ allowedCidrs: ['127.0.0.1/32'] });
const client = () => new RegistryClient({ host: reg.host }, undefined, loopback);

/** How `kpromo verify` names a key file: its name and the first 16 hex digits of its fingerprint. */
const named = (file: string, pem = readFileSync(file, 'utf8')) =>
  `${file.split('/').pop()} (${fingerprint(createPublicKey(pem)).slice(0, 23)})`;

/** Runs `kpromo …` in-process: output, and the exit code main.ts would use. */
const kpromo = runKpromo;

const facts = (digest: string, repo: string): PromotionFacts => ({
  plan: {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { namespace: 'team-a', name: 'rel-7', uid: `uid-${repo}` },
    spec: {
      flow: 'main',
      from: 'stable',
      to: 'prod',
      candidates: [],
      requestedBy: 'user:devon',
      approvals: [{ user: 'rita', groups: ['release-managers'] }, { user: 'rick' }],
    },
    status: {
      gate: {
        approved: true,
        required: 1,
        approvers: [
          { user: 'rita', person: 'rita@example.com', counted: true, observedAt: '2026-12-05T09:00:00Z' },
          // Another identity of the requester: judged as that person, so it does not count.
          { user: 'rick', person: 'devon@example.com', counted: false, observedAt: '2026-12-05T09:00:30Z' },
        ],
      },
    },
  } as PromotionPlan,
  app: {
    application: 'cart',
    phase: 'Writing',
    digest,
    targetTag: 'v3.1.0-20261205',
    startedAt: '2026-12-05T09:01:00Z',
  },
  source: { host: 'stable.example.com', repository: 'shop/cart', tag: 'v3.1.0' },
  target: { host: reg.host, repository: repo },
  controllerVersion: '0.1.0',
});

beforeAll(async () => {
  [reg, build] = await Promise.all([startRegistry({ name: 'verify-cli' }), cosignKeyPair()]);
  dir = build.dir;
  writeFileSync(join(dir, 'kpromo.pub'), key.publicKeyPem);
  writeFileSync(
    join(dir, 'other.pub'),
    generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      .publicKey.export({ type: 'spki', format: 'pem' })
      .toString(),
  );
}, 120_000);
afterAll(async () => Promise.all([reg?.stop(), loopback.close()]));

describe('kpromo verify', () => {
  it('prints the chain: built by (SLSA provenance), signed by, promoted with who requested and approved (the person each approval counted as, and one that did not count)', async () => {
    const { digest } = await pushTestImage({ host: reg.host, repository: 'prod/cart', tag: 'v3.1.0-20261205' });
    const image = `${reg.host}/prod/cart@${digest}`;
    await cosignSign(build, image);
    await cosignAttest(build, image, 'slsaprovenance1', {
      buildDefinition: { buildType: 'https://example.com/ci@v1' },
      runDetails: { builder: { id: 'https://ci.example.com/builders/shop' } },
    });
    await attestPromotion(client(), facts(digest, 'prod/cart'), key);

    const r = await kpromo([
      'verify',
      `${reg.host}/prod/cart:v3.1.0-20261205`,
      '--key',
      join(dir, 'kpromo.pub'),
      '--signature-key',
      build.pub,
      '--insecure',
    ]);
    expect(r.err).toBe('');
    expect(r.code).toBe(EXIT.OK);
    const [buildKey, kpromoKey] = [named(build.pub), named(join(dir, 'kpromo.pub'))];
    expect(r.out.split('\n')).toEqual([
      `image     ${image}`,
      `signed    by ${buildKey}`,
      `attested  https://slsa.dev/provenance/v1 by ${buildKey}, built by https://ci.example.com/builders/shop`,
      `promoted  stable -> prod at 2026-12-05T09:01:00Z by plan team-a/rel-7 (flow main), attestation signed by ${kpromoKey}`,
      '  requested by  user:devon',
      '  approved by   rita (release-managers) as rita@example.com at 2026-12-05T09:00:00Z',
      '  approved by   rick as devon@example.com at 2026-12-05T09:00:30Z, not counted',
      `  from          stable.example.com/shop/cart@${digest} (tag v3.1.0)`,
      '',
    ]);
    const json = await kpromo(['verify', image, '--key', join(dir, 'kpromo.pub'), '--insecure', '-o', 'json']);
    expect(JSON.parse(json.out)).toMatchObject({
      digest,
      promotions: [{ signedBy: kpromoKey, predicate: { to: 'prod' } }],
    });
  });

  it('exits 7 with another key, and rejects a tampered attestation that cosign also refuses', async () => {
    const { digest } = await pushTestImage({ host: reg.host, repository: 'prod/web', tag: 'v1.0.0' });
    const image = `${reg.host}/prod/web@${digest}`;
    const other = await kpromo(['verify', image, '--key', join(dir, 'other.pub'), '--insecure']);
    expect(other.code).toBe(EXIT.UNVERIFIED);
    expect(other.err).toBe(`no promotion attestation of ${image} verifies with the given keys`);

    // A genuine statement, signed, then edited: the approver swapped for someone who never approved.
    const bundle = (await signStatement(promotionStatement(facts(digest, 'prod/web')), key)) as {
      dsseEnvelope: { payload: string };
    };
    const statement = JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString('utf8'));
    statement.predicate.approvals = [{ user: 'mallory' }];
    bundle.dsseEnvelope.payload = Buffer.from(JSON.stringify(statement)).toString('base64');
    const head = await fetch(`${reg.url}/v2/prod/web/manifests/${digest}`, {
      method: 'HEAD',
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    await attachReferrer(
      client(),
      'prod/web',
      { mediaType: head.headers.get('content-type')!, digest, size: Number(head.headers.get('content-length')) },
      {
        artifactType: SIGSTORE_BUNDLE_V03,
        layer: { mediaType: SIGSTORE_BUNDLE_V03, bytes: new TextEncoder().encode(JSON.stringify(bundle)) },
      },
    );
    const r = await kpromo(['verify', image, '--key', join(dir, 'kpromo.pub'), '--insecure']);
    expect(r.code).toBe(EXIT.UNVERIFIED);
    expect(r.out).toContain('rejected  https://kpromo.dev/promotion/v1');
    expect(r.err).toContain(`not signed by a trusted key (${named(join(dir, 'kpromo.pub'))})`);
    const c = await cosign(
      [
        'verify-attestation',
        '--key',
        join(dir, 'kpromo.pub'),
        '--insecure-ignore-tlog',
        '--type',
        'https://kpromo.dev/promotion/v1',
        ...insecure,
        image,
      ],
      build,
    );
    expect(c.code).not.toBe(0);
  });

  it('a promotion attestation signed by the build key is refused when the build and promotion key files share a name', async () => {
    // keys/prod/cosign.pub is kpromo's promotion key, keys/build/cosign.pub the build's: same file
    // name, different keys. Whoever holds the build key (CI) signs a promotion nobody approved.
    const buildPair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const buildKey: SigningKey = {
      name: 'build/cosign.key',
      privateKey: buildPair.privateKey,
      publicKeyPem: buildPair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    };
    for (const [sub, pem] of [
      ['prod', key.publicKeyPem],
      ['build', buildKey.publicKeyPem],
    ]) {
      mkdirSync(join(dir, 'keys', sub), { recursive: true });
      writeFileSync(join(dir, 'keys', sub, 'cosign.pub'), pem);
    }
    const flags = [
      '--key',
      join(dir, 'keys/prod/cosign.pub'),
      '--signature-key',
      join(dir, 'keys/build/cosign.pub'),
      '--insecure',
    ];
    const forged = await pushTestImage({ host: reg.host, repository: 'prod/forged', tag: 'v1.0.0' });
    await attestPromotion(client(), facts(forged.digest, 'prod/forged'), buildKey);
    const r = await kpromo(['verify', `${reg.host}/prod/forged@${forged.digest}`, ...flags]);
    expect(r.code).toBe(EXIT.UNVERIFIED);
    expect(r.out).not.toContain('promoted  ');
    expect(r.err).toContain(
      `signed by ${named(join(dir, 'keys/build/cosign.pub'))}, which is not a key for this kind of statement`,
    );

    // The same files still accept the promotion the promotion key signed.
    const genuine = await pushTestImage({ host: reg.host, repository: 'prod/genuine', tag: 'v1.0.0' });
    await attestPromotion(client(), facts(genuine.digest, 'prod/genuine'), key);
    const ok = await kpromo(['verify', `${reg.host}/prod/genuine@${genuine.digest}`, ...flags]);
    expect(ok.err).toBe('');
    expect(ok.code).toBe(EXIT.OK);
    expect(ok.out).toContain('promoted  stable -> prod');
  });

  it('refuses one key passed under both --key and --signature-key, whatever the files are called', async () => {
    // A copy of the promotion key under another name: the same key, so it would vouch for builds and promotions alike.
    writeFileSync(join(dir, 'copy-of-kpromo.pem'), key.publicKeyPem);
    const r = await kpromo([
      'verify',
      `${reg.host}/prod/cart:v3.1.0-20261205`,
      '--key',
      join(dir, 'kpromo.pub'),
      '--signature-key',
      join(dir, 'copy-of-kpromo.pem'),
      '--insecure',
    ]);
    expect(r.code).toBe(EXIT.USAGE);
    expect(r.err).toMatch(
      new RegExp(
        `^--key ${join(dir, 'kpromo.pub')} and --signature-key ${join(dir, 'copy-of-kpromo.pem')} are the same key \\(sha256:[0-9a-f]{64}\\)`,
      ),
    );
  });

  it('--to and --target-repo refuse a promotion to another environment or repository, naming what was found', async () => {
    const { digest } = await pushTestImage({ host: reg.host, repository: 'prod/api', tag: 'v2.0.0' });
    await attestPromotion(client(), facts(digest, 'prod/api'), key);
    const image = `${reg.host}/prod/api@${digest}`;
    const run = (...extra: string[]) =>
      kpromo(['verify', image, '--key', join(dir, 'kpromo.pub'), '--insecure', ...extra]);
    const found = `stable -> prod into ${reg.host}/prod/api (plan team-a/rel-7)`;

    const otherEnv = await run('--to', 'staging');
    expect(otherEnv.code).toBe(EXIT.UNVERIFIED);
    expect(otherEnv.out).not.toContain('promoted  ');
    expect(otherEnv.out).toContain(`elsewhere ${found} at 2026-12-05T09:01:00Z`);
    expect(otherEnv.err).toBe(
      `no promotion attestation of ${image} verifies with the given keys for environment staging; found: ${found}`,
    );
    const otherRepo = await run('--target-repo', `${reg.host}/staging/api`);
    expect(otherRepo.code).toBe(EXIT.UNVERIFIED);
    expect(otherRepo.err).toBe(
      `no promotion attestation of ${image} verifies with the given keys for repository ${reg.host}/staging/api; found: ${found}`,
    );
    // Both asked, one of them wrong: refused.
    const half = await run('--to', 'prod', '--target-repo', `${reg.host}/staging/api`);
    expect(half.code).toBe(EXIT.UNVERIFIED);

    for (const extra of [
      ['--to', 'prod'],
      ['--target-repo', `${reg.host}/prod/api`],
      ['--to', 'prod', '--target-repo', `${reg.host}/prod/api`],
    ]) {
      const ok = await run(...extra);
      expect(ok.err).toBe('');
      expect(ok.code).toBe(EXIT.OK);
      expect(ok.out).toContain('promoted  stable -> prod');
    }
  });

  it('refuses a bad image reference or key file with a usage error, not a stack trace', async () => {
    const bad = await kpromo(['verify', 'not an image', '--key', join(dir, 'kpromo.pub')]);
    expect(bad).toMatchObject({ code: EXIT.USAGE });
    expect(bad.err).toContain('must be host/repository[:tag][@sha256:<digest>]');
    const noKey = await kpromo(['verify', `${reg.host}/prod/web:v1.0.0`, '--key', join(dir, 'missing.pub')]);
    expect(noKey).toMatchObject({ code: EXIT.USAGE, err: `--key ${join(dir, 'missing.pub')}: no such file` });
    writeFileSync(join(dir, 'private.pem'), readFileSync(build.key));
    const priv = await kpromo(['verify', `${reg.host}/prod/web:v1.0.0`, '--key', join(dir, 'private.pem')]);
    expect(priv).toMatchObject({
      code: EXIT.USAGE,
      err: `--key ${join(dir, 'private.pem')} holds a private key; pass the public key`,
    });
  });
});
