import { useApi } from '@backstage/frontend-plugin-api';
import { Alert, Button, Checkbox, Flex, Select, Text, TextField } from '@backstage/ui';
import {
  type AdoptionProposal,
  EmptyState,
  ErrorState,
  LoadingState,
  promotionAdoptPermission,
  promotionsApiRef,
  readableMessage,
  usePageTitle,
  usePromotionPermission,
  usePromotionsData,
} from '@kpromo/plugin-promotions-react';
import { useState } from 'react';

const flowKey = (f: { namespace: string; name: string }) => `${f.namespace}/${f.name}`;

/**
 * Onboarding: pick a flow, find the workloads running in its environments that no Application
 * promotes yet, choose some, and review the Applications kpromo proposes for them. Nothing is
 * applied from here: the YAML goes to the GitOps repository (a pull request, or the "Adopt a
 * service into kpromo" template), where it is reviewed and applied as any other change.
 */
export function AdoptPanel() {
  usePageTitle('Onboarding · Promotions');
  const api = useApi(promotionsApiRef);
  const perm = usePromotionPermission(promotionAdoptPermission);
  const flows = usePromotionsData((a) => a.listFlows(), []);
  const [flow, setFlow] = useState<string | undefined>();
  const [owner, setOwner] = useState('');
  const [found, setFound] = useState<AdoptionProposal | undefined>();
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [review, setReview] = useState<AdoptionProposal | undefined>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();

  if (!api.proposeAdoption) return null;
  if (flows.loading && !flows.value) return <LoadingState label="Loading flows…" />;
  if (flows.error) return <ErrorState error={flows.error} onRetry={flows.retry} />;
  const items = flows.value ?? [];
  if (!items.length)
    return (
      <EmptyState title="No PromotionFlow to adopt into">
        Adoption adds Applications to a flow whose Environments exist. Create them first (kpromo adopt --env … proposes
        them), then come back.
      </EmptyState>
    );
  if (!perm.loading && !perm.allowed)
    return (
      <EmptyState title="Adoption is not open to you">
        You need the permission promotion.adopt in the portal, and RBAC create on applications in the namespace.
      </EmptyState>
    );
  const selected = items.find((f) => flowKey(f) === flow) ?? items[0];

  const propose = async (applications?: string[]) => {
    setBusy(true);
    setError(undefined);
    try {
      return await api.proposeAdoption!({
        namespace: selected.namespace,
        flow: selected.name,
        ...(owner.trim() ? { owner: owner.trim() } : {}),
        ...(applications ? { applications } : {}),
      });
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  const find = async () => {
    setReview(undefined);
    const r = await propose();
    if (!r) return;
    setFound(r);
    setChosen(new Set(r.candidates.map((c) => c.application)));
  };
  const reviewChosen = async () => {
    const r = await propose([...chosen]);
    if (r) setReview(r);
  };
  const toggle = (app: string, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(app);
    else next.delete(app);
    setChosen(next);
    setReview(undefined);
  };

  return (
    <Flex direction="column" gap="4" data-testid="adopt">
      <Text as="p">
        Finds the workloads running in a flow's environments that no Application promotes yet. Choose the ones to adopt
        and review the Applications proposed for them. Nothing is applied from here: add the YAML to your GitOps
        repository, or run the template "Adopt a service into kpromo" to open a pull request.
      </Text>
      <Flex gap="3" align="end" style={{ flexWrap: 'wrap' }}>
        <Select
          label="Flow"
          aria-label="Flow to adopt into"
          selectedKey={flowKey(selected)}
          onSelectionChange={(k) => {
            setFlow(String(k));
            setFound(undefined);
            setReview(undefined);
          }}
          options={items.map((f) => ({ value: flowKey(f), label: `${f.namespace}/${f.name}` }))}
        />
        <TextField
          label="Owning team (where no workload label names one)"
          value={owner}
          onChange={(v) => {
            setOwner(v);
            setReview(undefined);
          }}
        />
        <Button variant="primary" onPress={find} isDisabled={busy}>
          Find workloads
        </Button>
      </Flex>
      {error ? <ErrorState title="Could not propose" error={error} /> : null}
      {found ? (
        <Flex direction="column" gap="2" data-testid="adopt-candidates">
          <Text as="h3" variant="title-small">
            {found.candidates.length
              ? `${found.candidates.length} application(s) to adopt in ${found.scanned.map((s) => `${s.environment} (${s.workloads} workloads)`).join(', ')}`
              : 'Every workload found is adopted already'}
          </Text>
          {found.candidates.map((c) => (
            <Checkbox
              key={c.application}
              isSelected={chosen.has(c.application)}
              onChange={(on) => toggle(c.application, on)}
            >
              {`${c.application} (${c.repository}): ${c.workloads.join(', ')}`}
            </Checkbox>
          ))}
          {found.findings.length ? (
            <Alert
              status="info"
              title="Review notes"
              description={
                <ul data-testid="adopt-findings">
                  {found.findings.map((f) => (
                    <li key={`${f.subject}: ${f.message}`}>
                      {f.level === 'undecided' ? 'Undecided' : 'Note'}: {f.subject}: {readableMessage(f.message)}
                    </li>
                  ))}
                </ul>
              }
            />
          ) : null}
          {found.candidates.length ? (
            <Flex>
              <Button variant="secondary" onPress={reviewChosen} isDisabled={busy || !chosen.size}>
                Review {chosen.size} application(s)
              </Button>
            </Flex>
          ) : null}
        </Flex>
      ) : null}
      {review ? <AdoptReview proposal={review} /> : null}
    </Flex>
  );
}

/** The proposed resources as YAML, to copy or download; governed changes said plainly. */
function AdoptReview({ proposal }: { proposal: AdoptionProposal }) {
  const [copied, setCopied] = useState(false);
  const governed = proposal.resources.filter((r) => r.governed);
  const href = `data:application/yaml;charset=utf-8,${encodeURIComponent(proposal.yaml)}`;
  return (
    <Flex direction="column" gap="2" data-testid="adopt-review">
      <Text as="h3" variant="title-small">
        {proposal.resources.map((r) => `${r.kind} ${r.name} (${r.change === 'create' ? 'new' : 'changed'})`).join(', ')}
      </Text>
      {governed.length ? (
        <Alert
          status="warning"
          title="Governed change"
          description={`${governed.map((r) => `${r.kind} ${r.name}`).join(', ')}: whoever applies it needs the RBAC verb govern (release policy).`}
        />
      ) : null}
      <section aria-label="Proposed resources">
        <pre
          style={{ maxHeight: '28rem', overflow: 'auto', padding: '0.75rem', background: 'var(--bui-bg-surface-2)' }}
        >
          {proposal.yaml}
        </pre>
      </section>
      <Flex gap="2">
        <Button
          variant="secondary"
          onPress={async () => {
            await navigator.clipboard?.writeText(proposal.yaml);
            setCopied(true);
          }}
        >
          {copied ? 'Copied' : 'Copy YAML'}
        </Button>
        <a href={href} download={`kpromo-adopt-${proposal.namespace}-${proposal.flow}.yaml`}>
          Download
        </a>
      </Flex>
    </Flex>
  );
}
