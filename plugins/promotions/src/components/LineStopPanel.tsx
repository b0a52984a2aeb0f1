import { useApi } from '@backstage/frontend-plugin-api';
import { Alert, Button, Flex, Text, TextField } from '@backstage/ui';
import {
  type LineStopView,
  promotionLineStopPermission,
  promotionsApiRef,
  readableMessage,
  usePromotionPermission,
  usePromotionsData,
} from '@kpromo/plugin-promotions-react';
import { useState } from 'react';
import { ConfirmDialog } from './Confirm';

/**
 * Where the line is stopped, with a button to stop it (asking why) and one to lift each stop, for
 * people holding promotion.line.stop. The controller still checks the signed-in user's RBAC
 * (create or delete on linestops) and records them as the stopper.
 */
export function LineStopPanel({ namespace }: { namespace?: string }) {
  const api = useApi(promotionsApiRef);
  const perm = usePromotionPermission(promotionLineStopPermission);
  const data = usePromotionsData(async (a) => (a.listLineStops ? a.listLineStops({ namespace }) : []), [namespace], {
    pollMs: 30_000,
    stop: () => false,
  });
  const [dialog, setDialog] = useState<{ stop: true } | { lift: LineStopView } | undefined>();
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  if (!api.listLineStops) return null;
  const stops = data.value ?? [];

  const run = async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      setDialog(undefined);
      setReason('');
      data.retry();
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      setBusy(false);
    }
  };
  const close = () => {
    setDialog(undefined);
    setError(undefined);
  };

  return (
    <Flex direction="column" gap="2" data-testid="line-stops">
      {stops.map((s) => (
        <Alert
          key={`${s.namespace}/${s.name}`}
          status="warning"
          title={`The line is stopped${s.scope === 'AllNamespaces' ? ' in every namespace' : ` in ${s.namespace}`}${s.environments?.length ? ` for ${s.environments.join(', ')}` : ''}`}
          description={
            <Flex justify="between" align="center" gap="3" style={{ flexWrap: 'wrap' }}>
              <Text variant="body-small">
                {s.stoppedBy ?? 'Someone'} stopped it
                {s.source?.kind === 'Alert' ? ` (alert ${s.source.alert ?? ''})` : ''}: {readableMessage(s.reason)}. No
                plan starts; running plans start no further app. Rollbacks and override-freeze hotfixes pass.
              </Text>
              {perm.allowed ? (
                <Button variant="secondary" onPress={() => setDialog({ lift: s })}>
                  Lift {s.name}
                </Button>
              ) : null}
            </Flex>
          }
        />
      ))}
      {perm.allowed ? (
        <Flex>
          <Button variant="secondary" onPress={() => setDialog({ stop: true })}>
            Stop the line
          </Button>
        </Flex>
      ) : null}

      <ConfirmDialog
        isOpen={!!dialog && 'stop' in dialog}
        title="Stop the line?"
        confirmLabel="Stop the line"
        destructive
        busy={busy}
        error={error}
        onCancel={close}
        onConfirm={() => run(() => api.stopLine!({ ...(namespace ? { namespace } : {}), reason }))}
      >
        <Text as="p">
          No plan starts until the stop is lifted, and running plans start no further app. You are recorded as the
          person who stopped it.
        </Text>
        <TextField label="Reason (shown on every held plan)" value={reason} onChange={setReason} isRequired />
      </ConfirmDialog>
      <ConfirmDialog
        isOpen={!!dialog && 'lift' in dialog}
        title={dialog && 'lift' in dialog ? `Lift ${dialog.lift.name}?` : 'Lift?'}
        confirmLabel="Lift the stop"
        busy={busy}
        error={error}
        onCancel={close}
        onConfirm={() =>
          dialog && 'lift' in dialog ? run(() => api.liftLineStop!(dialog.lift.namespace, dialog.lift.name)) : undefined
        }
      >
        <Text as="p">Held plans go on by themselves once it is lifted.</Text>
      </ConfirmDialog>
    </Flex>
  );
}
