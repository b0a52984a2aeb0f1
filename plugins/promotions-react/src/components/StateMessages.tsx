import { Alert, Button, Flex, Skeleton, Text } from '@backstage/ui';
import type { ReactNode } from 'react';
import { errorStatus, isNotFound } from '../api';

export function LoadingState({ label = 'Loading…' }: { label?: string }) {
  return (
    <Flex direction="column" gap="2" aria-busy="true" aria-label={label} role="status">
      <Skeleton width="100%" height={24} />
      <Skeleton width="100%" height={24} />
      <Skeleton width="60%" height={24} />
    </Flex>
  );
}

/** What to do about a failed call, by its status. */
export function errorHint(error: Error): string {
  const status = errorStatus(error);
  if (status === 401 || status === 403)
    return 'You are not allowed to see this. Ask a Backstage admin for the promotion.plan.read permission.';
  if (isNotFound(error)) return 'It does not exist (any more): it may have been deleted, or the link is wrong.';
  if (status === 404)
    return 'The promotions backend is not installed. Check that @kpromo/plugin-promotions-backend is added to the backend.';
  if (status === 400 || status === 409) return 'The request was refused; the message above says why.';
  return 'Check that the promotions backend and the kpromo controller are running, then retry.';
}

/** An error with what to do about it, a retry button and, optionally, the way back. */
export function ErrorState({
  error,
  onRetry,
  title,
  back,
}: {
  error: Error;
  onRetry?: () => void;
  title?: string;
  /** A link back to where things work, e.g. the plans list. */
  back?: ReactNode;
}) {
  return (
    <Alert
      status="danger"
      title={title ?? 'Could not load promotions data'}
      description={
        <>
          <Text as="p">{error.message}</Text>
          <Text as="p" variant="body-small">
            {errorHint(error)}
          </Text>
          {back ? <Text as="p">{back}</Text> : null}
        </>
      }
      customActions={
        onRetry ? (
          <Button size="small" variant="secondary" onPress={onRetry}>
            Retry
          </Button>
        ) : undefined
      }
    />
  );
}

export function EmptyState({ title, children, action }: { title: string; children?: ReactNode; action?: ReactNode }) {
  return (
    <Flex direction="column" gap="2" p="4" data-testid="empty-state">
      <Text as="h2" variant="title-small">
        {title}
      </Text>
      {children ? <Text as="p">{children}</Text> : null}
      {action}
    </Flex>
  );
}

/**
 * Announces `message` to screen readers when it changes (a polite live region, visually hidden).
 * Use for progress that updates without the user doing anything.
 */
export function LiveAnnouncer({ message, testId }: { message: string; testId?: string }) {
  return (
    <div
      role="status"
      aria-live="polite"
      aria-atomic="true"
      data-testid={testId}
      style={{
        position: 'absolute',
        width: 1,
        height: 1,
        padding: 0,
        margin: -1,
        overflow: 'hidden',
        clip: 'rect(0 0 0 0)',
        whiteSpace: 'nowrap',
        border: 0,
      }}
    >
      {message}
    </div>
  );
}
