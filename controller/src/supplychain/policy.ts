import {
  COSIGN_SIGN_PREDICATE_TYPE,
  type PromotionFlow,
  type SignatureCheck,
  type SignaturePolicy,
  type SignatureState,
} from '@kpromo/api';
import type { BundleVerdict } from './bundle.js';

/** Pure: the signature policy for promotions into `environment`: the stage's, else the flow's. */
export function signaturePolicyFor(flow: PromotionFlow, environment: string): SignaturePolicy | undefined {
  return flow.spec.stages.find((s) => s.environment === environment)?.signaturePolicy ?? flow.spec.signaturePolicy;
}

/** Pure: where {@link signaturePolicyFor}'s policy sits in the flow, for messages (`stages[1].signaturePolicy`). */
export function signaturePolicyField(flow: PromotionFlow, environment: string): string {
  const i = flow.spec.stages.findIndex((s) => s.environment === environment);
  return i >= 0 && flow.spec.stages[i].signaturePolicy ? `stages[${i}].signaturePolicy` : 'signaturePolicy';
}

/** Pure: the predicate types a policy requires, the image signature first. */
export function requiredPredicates(policy: SignaturePolicy): string[] {
  return [
    ...(policy.requireSignature === false ? [] : [COSIGN_SIGN_PREDICATE_TYPE]),
    ...(policy.attestations ?? []).map((a) => a.predicateType),
  ];
}

const label = (t: string) => (t === COSIGN_SIGN_PREDICATE_TYPE ? 'signature' : `attestation ${t}`);

/**
 * Pure: judges what the registry holds about `digest` (one verdict per Sigstore bundle found) against
 * the policy. Verified when every required predicate has a bundle signed by a trusted key; Invalid
 * when one is present but none of its bundles verifies; Unsigned when one is missing altogether.
 */
export function judgeSignatures(
  policy: SignaturePolicy,
  digest: string,
  found: BundleVerdict[],
  now: Date,
): SignatureState {
  const checks: SignatureCheck[] = requiredPredicates(policy).map((predicateType) => {
    const ofType = found.filter((f) => f.predicateType === predicateType);
    const good = ofType.find((f) => f.ok);
    if (good?.ok) return { predicateType, verified: true, signedBy: good.signedBy };
    const problems = [...new Set(ofType.map((f) => (f.ok ? '' : f.problem)))].filter(Boolean);
    return {
      predicateType,
      verified: false,
      message: problems.length ? `${ofType.length} found, none valid: ${problems.join('; ')}` : 'none found',
    };
  });
  const failed = checks.filter((c) => !c.verified);
  const verdict = !failed.length
    ? 'Verified'
    : failed.some((c) => found.some((f) => f.predicateType === c.predicateType))
      ? 'Invalid'
      : 'Unsigned';
  const unknown = found.filter((f) => !f.ok && !f.predicateType).length;
  const message = !failed.length
    ? checks.map((c) => `${label(c.predicateType)} by ${c.signedBy}`).join(', ') || 'nothing required'
    : `${failed.map((c) => `${label(c.predicateType)}: ${c.message}`).join('; ')}${unknown ? `; ${unknown} unreadable bundle(s)` : ''}`;
  return {
    digest,
    verdict,
    mode: policy.mode ?? 'Enforce',
    checks,
    message: message.slice(0, 2048),
    checkedAt: now.toISOString(),
  };
}

/** Pure: whether a state lets the image be copied. */
export const signaturesAllowCopy = (s: SignatureState) => s.verdict === 'Verified' || s.mode === 'Audit';
