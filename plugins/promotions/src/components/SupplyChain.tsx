import { Flex, Text } from '@backstage/ui';
import type { PromotionPlan } from '@kpromo/plugin-promotions-react';

type Status = NonNullable<PromotionPlan['status']>;
type Judged = NonNullable<Status['candidateSignatures']>[number];

const VERDICT: Record<string, { mark: string; color: string; words: string }> = {
  Verified: { mark: '✔', color: 'light-dark(#116932, #86efac)', words: 'Signed' },
  Unsigned: { mark: '✖', color: 'light-dark(#991919, #fca5a5)', words: 'Not signed' },
  Invalid: { mark: '✖', color: 'light-dark(#991919, #fca5a5)', words: 'Signature invalid' },
  Error: { mark: '?', color: 'light-dark(#92310a, #fdba74)', words: 'Signatures not checked' },
};

/**
 * The signature state of one app of a plan: the verdict checked before its copy, else the one the
 * controller judged while the plan waited for approval (so approvers see it before approving).
 */
export function signatureOf(
  plan: PromotionPlan,
  app: string,
): Pick<Judged, 'verdict' | 'mode' | 'message'> | undefined {
  const own = plan.status?.apps?.find((a) => a.application === app)?.signature;
  if (own) return own;
  const digest = plan.spec.candidates.find((c) => c.application === app)?.from.digest;
  return plan.status?.candidateSignatures?.find((s) => s.application === app && s.digest === digest);
}

/** "Signed / not signed" with what the policy found, and the signed promotion record once written. */
export function SupplyChainState({ plan, app }: { plan: PromotionPlan; app: string }) {
  const sig = signatureOf(plan, app);
  const attestation = plan.status?.apps?.find((a) => a.application === app)?.attestation;
  if (!sig && !attestation) return null;
  const v = sig ? (VERDICT[sig.verdict] ?? VERDICT.Error) : undefined;
  return (
    <Flex direction="column" gap="0" data-testid={`supply-chain-${app}`}>
      {sig && v ? (
        <Text variant="body-small">
          <span style={{ color: v.color }} aria-hidden="true">
            {v.mark}{' '}
          </span>
          <strong>{v.words}</strong>
          {sig.mode === 'Audit' && sig.verdict !== 'Verified' ? ' (audit only: not enforced)' : ''}: {sig.message}
        </Text>
      ) : null}
      {attestation ? (
        <Text variant="body-small" color="secondary">
          Promotion attested: signed by {attestation.signedBy} ({attestation.manifestDigest.slice(0, 19)}…); check with
          kpromo verify
        </Text>
      ) : null}
    </Flex>
  );
}

/**
 * One line for an app's history row: whether its image was signed, who approved the plan, and
 * whether the promotion record was signed: "signed · approved by alice · record signed by k".
 */
export function recordSummary(plan: PromotionPlan, app: string): string {
  const sig = signatureOf(plan, app);
  const gate = plan.status?.gate;
  const approvers = (gate?.approvers ?? []).filter((a) => a.counted).map((a) => a.user);
  const attestation = plan.status?.apps?.find((a) => a.application === app)?.attestation;
  return [
    sig ? (VERDICT[sig.verdict] ?? VERDICT.Error).words.toLowerCase() : '',
    approvers.length
      ? `approved by ${approvers.join(', ')}`
      : gate?.approved && gate.required === 0
        ? 'approved by policy'
        : '',
    attestation ? `record signed by ${attestation.signedBy}` : '',
  ]
    .filter(Boolean)
    .join(' · ');
}
