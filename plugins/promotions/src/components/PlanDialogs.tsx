import { useApi } from '@backstage/frontend-plugin-api';
import { Text, TextField } from '@backstage/ui';
import {
  type PlanProgress,
  type PlanDetails as PlanWithProgress,
  type PromotionPlan,
  promotionsApiRef,
} from '@kpromo/plugin-promotions-react';
import { useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { usePromotionsLinks } from '../routes';
import { ChangeList, ConfirmDialog, type PlanChange } from './Confirm';
import type { PlanDialog } from './PlanHeader';
import { versionLabel } from './planModel';

/**
 * The confirmations of the plan's actions: approve, approve overriding a freeze (with a reason),
 * and roll back. Each lists what changes; confirming calls the API and closes the dialog, a refusal
 * stays in it.
 */
export function PlanDialogs({
  plan,
  g,
  me,
  changes,
  mayApprove,
  dialog,
  onClose,
  onChange,
}: {
  plan: PromotionPlan;
  g: PlanProgress;
  /** The signed-in user. */
  me?: string;
  changes: PlanChange[];
  /** The user holds the approve permission: a rollback they create is approved right away. */
  mayApprove: boolean;
  dialog?: PlanDialog;
  onClose: () => void;
  /** What an action on the plan answered: the plan and its progress. */
  onChange: (p: PlanWithProgress) => void;
}) {
  const api = useApi(promotionsApiRef);
  const navigate = useNavigate();
  const links = usePromotionsLinks();
  const ns = plan.metadata.namespace ?? 'default';
  const isRollback = g.isRollback;
  const [reason, setReason] = useState('');
  const { busy, error, run, cancel } = useDialogAction(onClose);

  // Bound to the plan shown (its uid): one deleted and created again since is refused (409), and the
  // refusal is shown. The rollback's name is generated: go to the one created.
  const rollback = async () => {
    const { plan: rb } = await api.rollbackPlan(ns, plan.metadata.name, {
      approve: mayApprove,
      ...(plan.metadata.uid ? { uid: plan.metadata.uid } : {}),
    });
    navigate(links.plan(rb.metadata.namespace ?? ns, rb.metadata.name));
  };

  return (
    <>
      <ConfirmDialog
        isOpen={dialog === 'approve'}
        title={`Approve ${plan.metadata.name}?`}
        confirmLabel={isRollback ? 'Approve rollback' : `Promote to ${plan.spec.to}`}
        busy={busy}
        error={error}
        onCancel={cancel}
        onConfirm={() =>
          run(async () => onChange(await api.approvePlan(ns, plan.metadata.name, { uid: plan.metadata.uid ?? '' })))
        }
      >
        <Text as="p">
          {g.waitingFor
            ? `Your approval is recorded as ${me ?? 'you'}; the plan starts once the policy is met (now waiting for ${g.waitingFor}). `
            : ''}
          {isRollback
            ? `The controller restores the previous versions in ${plan.spec.to}. This changes:`
            : `The controller copies each image to the ${plan.spec.to} registry and rolls it out. This changes:`}
        </Text>
        {changes.length ? (
          <ChangeList changes={changes} to={plan.spec.to} />
        ) : (
          <Text as="p">The controller computes the versions to restore when the rollback starts.</Text>
        )}
      </ConfirmDialog>

      <ConfirmDialog
        isOpen={dialog === 'override'}
        title={`Override the freeze of ${plan.spec.to}?`}
        confirmLabel="Approve despite the freeze"
        destructive
        busy={busy}
        error={error}
        onCancel={cancel}
        onConfirm={() =>
          run(async () =>
            onChange(
              await api.approvePlan(ns, plan.metadata.name, {
                uid: plan.metadata.uid ?? '',
                overrideFreeze: true,
                // Required, a sentence at least: a missing or short one is refused, the refusal shown here.
                ...(reason.trim() ? { overrideReason: reason.trim() } : {}),
              }),
            ),
          )
        }
      >
        <Text as="p">
          {plan.spec.to} is frozen by window {g.frozen?.window}
          {g.frozen?.reason ? ` (${g.frozen.reason})` : ''}. Approving with an override lets this plan run now; it needs
          the override-freeze permission for {plan.spec.to} and is recorded with your name and reason. This changes:
        </Text>
        <ChangeList changes={changes} to={plan.spec.to} />
        <TextField
          label="Reason"
          description="Required: at least a sentence (20 characters, 3 words), kept with the plan, its history and notifications"
          placeholder="e.g. hotfix for INC-1234: checkout answers 500"
          value={reason}
          onChange={setReason}
        />
      </ConfirmDialog>

      <ConfirmDialog
        isOpen={dialog === 'rollback'}
        title={`Roll back ${plan.metadata.name}?`}
        confirmLabel="Roll back"
        destructive
        busy={busy}
        error={error}
        onCancel={cancel}
        onConfirm={() => run(rollback)}
      >
        <Text as="p">This creates a rollback plan restoring the versions {plan.spec.to} ran before:</Text>
        <RollbackList g={g} />
        {!mayApprove ? (
          <Text as="p" variant="body-small">
            You cannot approve; the rollback plan waits for an approver.
          </Text>
        ) : null}
      </ConfirmDialog>
    </>
  );
}

/**
 * A dialog's confirm action: busy while it runs, closes on success, keeps a refusal to show it.
 * Cancelling closes and forgets the refusal.
 */
function useDialogAction(onClose: () => void) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      onClose();
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      setBusy(false);
    }
  };
  const cancel = () => {
    onClose();
    setError(undefined);
  };
  return { busy, error, run, cancel };
}

/** What a rollback restores: each application the plan wrote, from its version back to the one before. */
function RollbackList({ g }: { g: PlanProgress }) {
  return (
    <ul data-testid="rollback-list" style={{ margin: 0, paddingLeft: 20 }}>
      {g.apps
        .filter((a) => a.written)
        .map((a) => (
          <li key={a.application}>
            <strong>{a.application}</strong>: {a.targetTag ?? '?'} → {versionLabel(a.previous) ?? '?'}
          </li>
        ))}
    </ul>
  );
}
