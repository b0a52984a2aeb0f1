import { createPublicKey } from 'node:crypto';
import { type AppProgress, PROMOTION_PREDICATE_TYPE, type PromotionPlan, type SignatureState } from '@kpromo/api';
import { getManifest } from '../oci/copyImage.js';
import { attachReferrer } from '../oci/referrers.js';
import type { RegistryClient } from '../oci/registryClient.js';
import { SIGSTORE_BUNDLE_V03, type Statement, signStatement } from './bundle.js';
import { bundlesAbout } from './check.js';
import type { SigningKey } from './keys.js';

/** The predicate of kpromo's promotion attestation (https://kpromo.dev/promotion/v1). */
export interface PromotionPredicate {
  plan: { namespace: string; name: string; uid: string };
  flow: string;
  from: string;
  to: string;
  application: string;
  source: { image: string; tag?: string };
  target: { image: string; tag: string };
  requestedBy?: string;
  /**
   * `person`: who the controller judged the approval as (the controller config's persons; one person
   * counts once, never for their own plan); `counted`: whether it counted toward the stage's policy.
   */
  approvals: Array<{ user: string; groups?: string[]; observedAt?: string; person?: string; counted?: boolean }>;
  sourceSignatures?: Pick<SignatureState, 'verdict' | 'message'> & { signedBy?: string[] };
  promotedAt: string;
  controller: { name: 'kpromo'; version: string };
}

export interface PromotionFacts {
  plan: PromotionPlan;
  app: AppProgress;
  source: { host: string; repository: string; tag?: string };
  target: { host: string; repository: string };
  controllerVersion: string;
}

/**
 * Pure: the in-toto statement kpromo signs for one promoted digest. Approvers are the identities
 * admission bound to their approvals, with what the controller judged of each (when it saw it, the
 * person it counted as, whether it counted); the requester is the one admission recorded: never a
 * string from a request body.
 */
export function promotionStatement(f: PromotionFacts): Statement {
  const { plan, app } = f;
  const [alg, hex] = app.digest!.split(':');
  const judged = new Map((plan.status?.gate?.approvers ?? []).map((a) => [a.user, a]));
  const predicate: PromotionPredicate = {
    plan: { namespace: plan.metadata.namespace!, name: plan.metadata.name!, uid: plan.metadata.uid ?? '' },
    flow: plan.spec.flow,
    from: plan.spec.from,
    to: plan.spec.to,
    application: app.application,
    source: {
      image: `${f.source.host}/${f.source.repository}@${app.digest}`,
      ...(f.source.tag ? { tag: f.source.tag } : {}),
    },
    target: { image: `${f.target.host}/${f.target.repository}:${app.targetTag}@${app.digest}`, tag: app.targetTag! },
    ...(plan.spec.requestedBy ? { requestedBy: plan.spec.requestedBy } : {}),
    approvals: (plan.spec.approvals ?? []).map((a) => {
      const g = judged.get(a.user);
      return {
        user: a.user,
        ...(a.groups?.length ? { groups: a.groups } : {}),
        ...(g?.observedAt ? { observedAt: g.observedAt } : {}),
        ...(g?.person ? { person: g.person } : {}),
        ...(g ? { counted: g.counted } : {}),
      };
    }),
    ...(app.signature
      ? {
          sourceSignatures: {
            verdict: app.signature.verdict,
            message: app.signature.message,
            signedBy: [...new Set(app.signature.checks.flatMap((c) => (c.signedBy ? [c.signedBy] : [])))],
          },
        }
      : {}),
    promotedAt: app.startedAt ?? new Date(0).toISOString(),
    controller: { name: 'kpromo', version: f.controllerVersion },
  };
  return {
    _type: 'https://in-toto.io/Statement/v1',
    subject: [{ name: `${f.target.host}/${f.target.repository}`, digest: { [alg]: hex } }],
    predicateType: PROMOTION_PREDICATE_TYPE,
    predicate,
  };
}

/**
 * Signs the promotion statement and attaches it to the promoted digest in the target repository
 * as a Sigstore bundle referrer (the layout cosign 3 writes, so `cosign verify-attestation` finds
 * it). Idempotent across retries and leaders: an attestation this key already signed for this plan
 * and app is reused, not signed again. Returns the referrer manifest's digest.
 */
export async function attestPromotion(
  client: RegistryClient,
  facts: PromotionFacts,
  key: SigningKey,
  signal?: AbortSignal,
): Promise<string> {
  const repo = facts.target.repository;
  const digest = facts.app.digest!;
  const mine = [{ name: key.name, key: createPublicKey(key.publicKeyPem) }];
  const existing = (await bundlesAbout(client, repo, digest, mine, signal)).find((b) => {
    if (!b.ok || b.predicateType !== PROMOTION_PREDICATE_TYPE) return false;
    const p = b.statement.predicate as Partial<PromotionPredicate> | undefined;
    return p?.plan?.uid === facts.plan.metadata.uid && p?.application === facts.app.application;
  });
  if (existing) return existing.manifestDigest;
  const bundle = await signStatement(promotionStatement(facts), key);
  const subject = await getManifest(client, repo, digest, signal);
  return attachReferrer(
    client,
    repo,
    { mediaType: subject.mediaType, digest, size: subject.bytes.byteLength },
    {
      artifactType: SIGSTORE_BUNDLE_V03,
      layer: { mediaType: SIGSTORE_BUNDLE_V03, bytes: new TextEncoder().encode(JSON.stringify(bundle)) },
      annotations: {
        'dev.sigstore.bundle.content': 'dsse-envelope',
        'dev.sigstore.bundle.predicateType': PROMOTION_PREDICATE_TYPE,
        'org.opencontainers.image.created': facts.app.startedAt ?? new Date(0).toISOString(),
      },
    },
    signal,
  );
}
