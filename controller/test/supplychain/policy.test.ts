import { generateKeyPairSync, sign } from 'node:crypto';
import {
  COSIGN_SIGN_PREDICATE_TYPE,
  PROMOTION_PREDICATE_TYPE,
  type PromotionFlow,
  type PromotionPlan,
  type SignaturePolicy,
} from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { planOut } from '../../src/mcp/views.js';
import { promotionStatement } from '../../src/supplychain/attestation.js';
import { type BundleVerdict, signStatement, verifyBundle } from '../../src/supplychain/bundle.js';
import { verifyLegacyAttestation, verifySimpleSigning } from '../../src/supplychain/legacy.js';
import {
  judgeSignatures,
  signaturePolicyField,
  signaturePolicyFor,
  signaturesAllowCopy,
} from '../../src/supplychain/policy.js';

const D = `sha256:${'a'.repeat(64)}`;
const SPDX = 'https://spdx.dev/Document';
const policy: SignaturePolicy = { keys: [{ name: 'k' }], attestations: [{ predicateType: SPDX }] };
const now = new Date('2026-12-05T10:00:00Z');
const good = (predicateType: string, signedBy = 'k/cosign.pub'): BundleVerdict => ({
  ok: true,
  predicateType,
  signedBy,
  statement: { _type: 'https://in-toto.io/Statement/v1', subject: [], predicateType },
});
const bad = (predicateType: string | undefined, problem: string): BundleVerdict => ({
  ok: false,
  ...(predicateType ? { predicateType } : {}),
  problem,
});

describe('judgeSignatures', () => {
  it('is Verified only when every required predicate has a bundle by a trusted key', () => {
    const s = judgeSignatures(policy, D, [good(COSIGN_SIGN_PREDICATE_TYPE), good(SPDX, 'k/new.pub')], now);
    expect(s).toMatchObject({ verdict: 'Verified', mode: 'Enforce', digest: D, checkedAt: '2026-12-05T10:00:00.000Z' });
    expect(s.message).toBe(`signature by k/cosign.pub, attestation ${SPDX} by k/new.pub`);
    expect(signaturesAllowCopy(s)).toBe(true);
  });

  it('one good bundle of a type is enough, whatever invalid ones sit beside it', () => {
    const s = judgeSignatures(
      policy,
      D,
      [bad(COSIGN_SIGN_PREDICATE_TYPE, 'not signed by a trusted key'), good(COSIGN_SIGN_PREDICATE_TYPE), good(SPDX)],
      now,
    );
    expect(s.verdict).toBe('Verified');
  });

  it('is Unsigned when a required predicate is missing, Invalid when present but not valid', () => {
    const missing = judgeSignatures(policy, D, [good(COSIGN_SIGN_PREDICATE_TYPE)], now);
    expect(missing).toMatchObject({ verdict: 'Unsigned', message: `attestation ${SPDX}: none found` });
    expect(signaturesAllowCopy(missing)).toBe(false);
    const invalid = judgeSignatures(
      policy,
      D,
      [
        bad(COSIGN_SIGN_PREDICATE_TYPE, 'signed for another image, not x'),
        good(SPDX),
        bad(undefined, 'not a valid Sigstore bundle'),
      ],
      now,
    );
    expect(invalid.verdict).toBe('Invalid');
    expect(invalid.message).toBe(
      'signature: 1 found, none valid: signed for another image, not x; 1 unreadable bundle(s)',
    );
  });

  it('an attestation-only policy does not ask for a signature; Audit records a failure but allows the copy', () => {
    const s = judgeSignatures({ ...policy, requireSignature: false, mode: 'Audit' }, D, [], now);
    expect(s.checks.map((c) => c.predicateType)).toEqual([SPDX]);
    expect(s).toMatchObject({ verdict: 'Unsigned', mode: 'Audit' });
    expect(signaturesAllowCopy(s)).toBe(true);
  });
});

describe('signaturePolicyFor', () => {
  it("takes the stage's policy over the flow's, and the flow's for other stages", () => {
    const stage: SignaturePolicy = { keys: [{ name: 'prod-keys' }] };
    const flow = {
      spec: {
        stages: [{ environment: 'dev' }, { environment: 'prod', signaturePolicy: stage }],
        signaturePolicy: policy,
      },
    } as unknown as PromotionFlow;
    expect(signaturePolicyFor(flow, 'prod')).toBe(stage);
    expect(signaturePolicyFor(flow, 'dev')).toBe(policy);
    expect(signaturePolicyFor({ spec: { stages: [] } } as unknown as PromotionFlow, 'dev')).toBeUndefined();
    // Messages name where the policy sits.
    expect(signaturePolicyField(flow, 'prod')).toBe('stages[1].signaturePolicy');
    expect(signaturePolicyField(flow, 'dev')).toBe('signaturePolicy');
  });
});

describe('promotion statement and bundle', () => {
  const plan = {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { namespace: 'team-a', name: 'rel-1', uid: 'u-1' },
    spec: {
      flow: 'main',
      from: 'stable',
      to: 'prod',
      candidates: [{ application: 'cart', from: { tag: 'v1', digest: D } }],
      requestedBy: 'user:devon',
      approvals: [{ user: 'rita', groups: ['rm'], comment: 'ship it' }, { user: 'rick' }],
    },
    status: {
      gate: {
        approved: true,
        required: 2,
        approvers: [
          { user: 'rita', person: 'rita@example.com', counted: true, observedAt: 't1' },
          { user: 'rick', person: 'devon@example.com', counted: false, why: 'the requester (devon@example.com)' },
        ],
      },
    },
  } as PromotionPlan;
  const facts = {
    plan,
    app: { application: 'cart', phase: 'Writing' as const, digest: D, targetTag: 'v1-x', startedAt: 't2' },
    source: { host: 'src.example.com', repository: 'shop/cart', tag: 'v1' },
    target: { host: 'prod.example.com', repository: 'prod/shop/cart' },
    controllerVersion: '9.9.9',
  };

  it('names the target digest as subject and records approvers as admission bound them, with the time first seen, the person each counted as and whether it counted', () => {
    const s = promotionStatement(facts);
    expect(s).toEqual({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: 'prod.example.com/prod/shop/cart', digest: { sha256: 'a'.repeat(64) } }],
      predicateType: PROMOTION_PREDICATE_TYPE,
      predicate: {
        plan: { namespace: 'team-a', name: 'rel-1', uid: 'u-1' },
        flow: 'main',
        from: 'stable',
        to: 'prod',
        application: 'cart',
        source: { image: `src.example.com/shop/cart@${D}`, tag: 'v1' },
        target: { image: `prod.example.com/prod/shop/cart:v1-x@${D}`, tag: 'v1-x' },
        requestedBy: 'user:devon',
        approvals: [
          { user: 'rita', groups: ['rm'], observedAt: 't1', person: 'rita@example.com', counted: true },
          { user: 'rick', person: 'devon@example.com', counted: false },
        ],
        promotedAt: 't2',
        controller: { name: 'kpromo', version: '9.9.9' },
      },
    });
  });

  it('a signed statement verifies with its key only, and only for its subject', async () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const other = generateKeyPairSync('ed25519');
    const key = {
      name: 'kpromo/key.pem',
      privateKey: pair.privateKey,
      publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    };
    const bundle = await signStatement(promotionStatement(facts), key);
    expect(bundle.mediaType).toBe('application/vnd.dev.sigstore.bundle.v0.3+json');
    expect(verifyBundle(bundle, D, [{ name: 'mine', key: pair.publicKey }])).toMatchObject({
      ok: true,
      signedBy: 'mine',
    });
    expect(verifyBundle(bundle, D, [{ name: 'other', key: other.publicKey }])).toMatchObject({
      ok: false,
      problem: 'not signed by a trusted key (other)',
    });
    expect(verifyBundle(bundle, `sha256:${'b'.repeat(64)}`, [{ name: 'mine', key: pair.publicKey }])).toMatchObject({
      ok: false,
      problem: `signed for another image, not sha256:${'b'.repeat(64)}`,
    });
    expect(verifyBundle({ mediaType: 'nonsense' }, D, [])).toMatchObject({ ok: false });
  });
});

describe('MCP state', () => {
  it("shows each candidate's signature verdict, and the app's verdict and attestation once copied", () => {
    const judged = { digest: D, mode: 'Enforce' as const, checks: [], checkedAt: 't' };
    const p = {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'PromotionPlan',
      metadata: { namespace: 'team-a', name: 'rel-1' },
      spec: {
        flow: 'main',
        from: 'stable',
        to: 'prod',
        candidates: [
          { application: 'cart', from: { tag: 'v1', digest: D } },
          { application: 'web', from: { tag: 'v1', digest: D } },
        ],
      },
      status: {
        phase: 'Promoting',
        candidateSignatures: [
          { application: 'cart', ...judged, verdict: 'Verified', message: 'old' },
          { application: 'web', ...judged, verdict: 'Unsigned', message: 'signature: none found' },
        ],
        apps: [
          {
            application: 'cart',
            phase: 'Writing',
            signature: { ...judged, verdict: 'Verified', message: 'signature by k' },
            attestation: { predicateType: PROMOTION_PREDICATE_TYPE, manifestDigest: 'sha256:m', signedBy: 'kp' },
          },
        ],
      },
    } as PromotionPlan;
    const out = planOut(p);
    expect(out.candidates.map((c) => c.signature)).toEqual([
      { verdict: 'Verified', mode: 'Enforce', message: 'signature by k' },
      { verdict: 'Unsigned', mode: 'Enforce', message: 'signature: none found' },
    ]);
    expect(out.apps[0]).toMatchObject({ attestation: { manifestDigest: 'sha256:m', signedBy: 'kp' } });
  });
});

describe("cosign 2's tag scheme", () => {
  const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const keys = [{ name: 'k/cosign.pub', key: pair.publicKey }];
  const payload = (digest: string) =>
    Buffer.from(
      JSON.stringify({
        critical: {
          identity: { 'docker-reference': 'reg.example.com/shop/cart' },
          image: { 'docker-manifest-digest': digest },
          type: 'cosign container image signature',
        },
        optional: null,
      }),
    );
  const signB64 = (data: Buffer, key = pair.privateKey) => sign('sha256', data, key).toString('base64');

  it('a simple-signing signature verifies for its digest only, and with a trusted key only', () => {
    const p = payload(D);
    expect(verifySimpleSigning(p, signB64(p), D, keys)).toMatchObject({
      ok: true,
      predicateType: COSIGN_SIGN_PREDICATE_TYPE,
      signedBy: 'k/cosign.pub',
    });
    const other = payload(`sha256:${'b'.repeat(64)}`);
    expect(verifySimpleSigning(other, signB64(other), D, keys)).toMatchObject({
      ok: false,
      problem: `signed for another image, not ${D}`,
    });
    const stranger = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
    expect(verifySimpleSigning(p, signB64(p, stranger), D, keys)).toMatchObject({
      ok: false,
      problem: 'not signed by a trusted key (k/cosign.pub)',
    });
    expect(verifySimpleSigning(p, undefined, D, keys)).toMatchObject({ ok: false });
  });

  it('a DSSE attestation verifies over its pre-authentication encoding, and not once its payload changed', () => {
    const statement = {
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: 'x', digest: { sha256: 'a'.repeat(64) } }],
      predicateType: SPDX,
      predicate: {},
    };
    const body = Buffer.from(JSON.stringify(statement));
    // DSSE v1 PAE, spelled out as the spec defines it: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body.
    const type = 'application/vnd.in-toto+json';
    const pae = Buffer.concat([Buffer.from(`DSSEv1 ${type.length} ${type} ${body.length} `), body]);
    const envelope = {
      payloadType: type,
      payload: body.toString('base64'),
      signatures: [{ keyid: '', sig: signB64(pae) }],
    };
    expect(verifyLegacyAttestation(envelope, D, keys)).toMatchObject({
      ok: true,
      predicateType: SPDX,
      signedBy: 'k/cosign.pub',
    });
    const tampered = {
      ...envelope,
      payload: Buffer.from(JSON.stringify({ ...statement, predicate: { evil: true } })).toString('base64'),
    };
    expect(verifyLegacyAttestation(tampered, D, keys)).toMatchObject({
      ok: false,
      problem: 'not signed by a trusted key (k/cosign.pub)',
    });
  });
});
