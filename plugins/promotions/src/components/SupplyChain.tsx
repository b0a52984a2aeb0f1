import { Flex, Text } from '@backstage/ui';
import { type PlanProgress, type PromotionPlan, planProgress } from '@kpromo/plugin-promotions-react';

const VERDICT: Record<string, { mark: string; color: string; words: string }> = {
  Verified: { mark: '✔', color: 'light-dark(#116932, #86efac)', words: 'Signed' },
  Unsigned: { mark: '✖', color: 'light-dark(#991919, #fca5a5)', words: 'Not signed' },
  Invalid: { mark: '✖', color: 'light-dark(#991919, #fca5a5)', words: 'Signature invalid' },
  Error: { mark: '?', color: 'light-dark(#92310a, #fdba74)', words: 'Signatures not checked' },
};

/**
 * The signature state of one app of a plan, from the read model: the verdict checked before its
 * copy, else the one the controller judged while the plan waited for approval (so approvers see it
 * before approving). PlanProgress.signatures lists candidates only: a rollback's apps (it has no
 * candidates) carry their copy-time verdict on their own progress.
 */
function signatureOf(g: Pick<PlanProgress, 'signatures' | 'apps'>, app: string) {
  return g.signatures.find((s) => s.application === app) ?? g.apps.find((a) => a.application === app)?.signature;
}

const attestationOf = (g: Pick<PlanProgress, 'apps'>, app: string) =>
  g.apps.find((a) => a.application === app)?.attestation;

/** "Signed / not signed" with what the policy found, and the signed promotion record once written. */
export function SupplyChainState({ progress, app }: { progress: PlanProgress; app: string }) {
  const sig = signatureOf(progress, app);
  const attestation = attestationOf(progress, app);
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
  // A plan of a list: the backend sends no progress with those, so it is projected here.
  const g = planProgress(plan);
  const sig = signatureOf(g, app);
  // status.gate itself: who counted, in the order the controller judged them, and required (0: by policy).
  const gate = plan.status?.gate;
  const approvers = (gate?.approvers ?? []).filter((a) => a.counted).map((a) => a.user);
  const attestation = attestationOf(g, app);
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
