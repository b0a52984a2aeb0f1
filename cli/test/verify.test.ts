import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import type { ImageReport, PromotionPredicate } from '@kpromo/controller/supplychain';
import { describe, expect, it } from 'vitest';
import { CliFailure, EXIT, UsageError } from '../src/exitCodes.js';
import {
  fingerprint,
  type KeyFile,
  keyRoles,
  requirePromotion,
  requireVerified,
  targetRepository,
  verifyText,
} from '../src/verify.js';

const publicKey = () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey;
const file = (path: string, flag: KeyFile['flag'], key = publicKey()): KeyFile => ({
  path,
  flag,
  key,
  fingerprint: fingerprint(key),
});

describe('kpromo verify: keys told apart by fingerprint', () => {
  it('fingerprint is the sha256 of the DER SubjectPublicKeyInfo, the same from PEM or the key object', () => {
    const key = publicKey();
    const der = key.export({ type: 'spki', format: 'der' });
    expect(fingerprint(key)).toBe(`sha256:${createHash('sha256').update(der).digest('hex')}`);
    expect(fingerprint(createPublicKey(key.export({ type: 'spki', format: 'pem' })))).toBe(fingerprint(key));
  });

  it('two keys with the same file name get different names, each carrying its fingerprint', () => {
    const prod = file('keys/prod/cosign.pub', '--key');
    const build = file('keys/build/cosign.pub', '--signature-key');
    const { promotionKeys, signatureKeys } = keyRoles([prod, build]);
    expect(promotionKeys.map((k) => k.name)).toEqual([`cosign.pub (${prod.fingerprint.slice(0, 23)})`]);
    expect(signatureKeys.map((k) => k.name)).toEqual([`cosign.pub (${build.fingerprint.slice(0, 23)})`]);
    expect(promotionKeys[0].key).toBe(prod.key);
    expect(signatureKeys[0].key).toBe(build.key);
  });

  it('refuses one key under both flags, whatever the files are called, naming both files and the fingerprint', () => {
    const key = publicKey();
    const a = file('kpromo.pub', '--key', key);
    const b = file('elsewhere/build.pem', '--signature-key', key);
    for (const order of [
      [a, b],
      [b, a],
    ])
      expect(() => keyRoles(order)).toThrow(
        new UsageError(
          `--key kpromo.pub and --signature-key elsewhere/build.pem are the same key (${a.fingerprint}): the key kpromo signs promotions with must not be the build's; pass each key under one flag only`,
        ),
      );
  });

  it('the same key twice under one flag counts once; several keys (rotation) all count', () => {
    const key = publicKey();
    const { promotionKeys } = keyRoles([
      file('old/kpromo.pub', '--key', key),
      file('copy/kpromo.pub', '--key', key),
      file('new/kpromo.pub', '--key'),
    ]);
    expect(promotionKeys).toHaveLength(2);
  });
});

const predicate = (to: string, targetImage: string): PromotionPredicate => ({
  plan: { namespace: 'team-a', name: `rel-${to}`, uid: 'u' },
  flow: 'main',
  from: 'stable',
  to,
  application: 'cart',
  source: { image: 'stable.example.com/shop/cart@sha256:aa' },
  target: { image: targetImage, tag: 'v1' },
  approvals: [],
  promotedAt: '2026-12-05T09:01:00Z',
  controller: { name: 'kpromo', version: '0.1.0' },
});
const report = (...promotions: PromotionPredicate[]): ImageReport => ({
  image: 'reg.example.com/prod/cart@sha256:aa',
  digest: 'sha256:aa',
  promotions: promotions.map((p) => ({ manifestDigest: 'sha256:bb', signedBy: 'kpromo.pub (sha256:1)', predicate: p })),
  evidence: [],
  rejected: [],
});

describe('kpromo verify --to / --target-repo', () => {
  it.each([
    ['reg.example.com/prod/cart:v1@sha256:aa', 'reg.example.com/prod/cart'],
    ['localhost:5000/prod/cart:v1@sha256:aa', 'localhost:5000/prod/cart'],
    ['localhost:5000/prod/cart@sha256:aa', 'localhost:5000/prod/cart'],
    ['localhost:5000/prod/cart', 'localhost:5000/prod/cart'],
  ])('the target repository of %s is %s', (image, repo) => {
    expect(targetRepository(predicate('prod', image))).toBe(repo);
  });

  const prod = predicate('prod', 'reg.example.com/prod/cart:v1@sha256:aa');
  const staging = predicate('staging', 'reg.example.com/staging/cart:v1@sha256:aa');
  it.each([
    ['nothing asked: every promotion counts', {}, [prod, staging], []],
    ['--to prod', { to: 'prod' }, [prod], [staging]],
    ['--to qa', { to: 'qa' }, [], [prod, staging]],
    ['--target-repo staging', { targetRepo: 'reg.example.com/staging/cart' }, [staging], [prod]],
    ['--target-repo on another host', { targetRepo: 'other.example.com/prod/cart' }, [], [prod, staging]],
    ['--to and --target-repo agree', { to: 'prod', targetRepo: 'reg.example.com/prod/cart' }, [prod], [staging]],
    [
      '--to and --target-repo of two promotions',
      { to: 'prod', targetRepo: 'reg.example.com/staging/cart' },
      [],
      [prod, staging],
    ],
  ] as const)('%s', (_, required, counted, elsewhere) => {
    const r = requirePromotion(report(prod, staging), required);
    expect(r.promotions.map((p) => p.predicate)).toEqual(counted);
    expect(r.elsewhere.map((p) => p.predicate)).toEqual(elsewhere);
  });

  it('refuses with exit 7, naming what was asked and what was found', () => {
    const r = requirePromotion(report(prod), { to: 'staging', targetRepo: 'reg.example.com/staging/cart' });
    expect(() => requireVerified(r)).toThrow(
      new CliFailure(
        EXIT.UNVERIFIED,
        'no promotion attestation of reg.example.com/prod/cart@sha256:aa verifies with the given keys for environment staging and repository reg.example.com/staging/cart; found: stable -> prod into reg.example.com/prod/cart (plan team-a/rel-prod)',
      ),
    );
    expect(() => requireVerified(requirePromotion(report(prod), { to: 'prod' }))).not.toThrow();
    expect(verifyText(r).split('\n')).toContain(
      'elsewhere stable -> prod into reg.example.com/prod/cart (plan team-a/rel-prod) at 2026-12-05T09:01:00Z, attestation signed by kpromo.pub (sha256:1): not the environment or repository asked for',
    );
  });
});
