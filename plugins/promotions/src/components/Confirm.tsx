import { Alert, Button, Dialog, DialogBody, DialogFooter, DialogHeader, Flex, Text } from '@backstage/ui';
import { readableMessage } from '@kpromo/plugin-promotions-react';
import type { ReactNode } from 'react';

/** One application's change in the target environment: the version before and after. */
export interface PlanChange {
  application: string;
  from?: string;
  to?: string;
}

/** What a plan changes, as the confirmation dialogs list it: `checkout: v1.0.0 → v1.1.0 in stable`. */
export function ChangeList({
  changes,
  to,
  testId = 'change-list',
}: {
  changes: PlanChange[];
  to: string;
  testId?: string;
}) {
  return (
    <ul data-testid={testId} style={{ margin: 0, paddingLeft: 20 }}>
      {changes.map((c) => (
        <li key={c.application}>
          <Text weight="bold">{c.application}</Text>: {c.from ?? 'not deployed'} → {c.to ?? '?'} in{' '}
          <Text weight="bold">{to}</Text>
        </li>
      ))}
    </ul>
  );
}

/** The confirmation step of every action that changes an environment: what changes, then confirm. */
export function ConfirmDialog(props: {
  isOpen: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  destructive?: boolean;
  busy: boolean;
  error?: Error;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <Dialog isOpen={props.isOpen} onOpenChange={(open) => !open && props.onCancel()} width={560}>
      <DialogHeader>{props.title}</DialogHeader>
      <DialogBody>
        <Flex direction="column" gap="3">
          {props.children}
          {props.error ? (
            <Alert status="danger" title="The request failed" description={readableMessage(props.error.message)} />
          ) : null}
        </Flex>
      </DialogBody>
      <DialogFooter>
        <Button variant="secondary" onPress={props.onCancel}>
          Cancel
        </Button>
        <Button variant="primary" destructive={props.destructive} isPending={props.busy} onPress={props.onConfirm}>
          {props.confirmLabel}
        </Button>
      </DialogFooter>
    </Dialog>
  );
}
