import { Alert, Button, Flex, Skeleton, Text } from '@backstage/ui';
import type { ReactNode } from 'react';

export function LoadingState({ label = 'Loading…' }: { label?: string }) {
  return (
    <Flex direction="column" gap="2" aria-busy="true" aria-label={label}>
      <Skeleton width="100%" height={24} />
      <Skeleton width="100%" height={24} />
      <Skeleton width="60%" height={24} />
    </Flex>
  );
}

/** An error with what to do about it, and a retry button. */
export function ErrorState({ error, onRetry, title }: { error: Error; onRetry?: () => void; title?: string }) {
  const status = (error as { response?: { status?: number } }).response?.status;
  const hint =
    status === 401 || status === 403
      ? 'You are not allowed to see this. Ask a Backstage admin for the promotion.plan.read permission.'
      : status === 404
        ? 'The promotions backend is not installed or the resource is gone. Check that @kpromo/plugin-promotions-backend is added to the backend.'
        : 'Check that the promotions backend and the kpromo controller are running, then retry.';
  return (
    <Alert
      status="danger"
      title={title ?? 'Could not load promotions data'}
      description={
        <>
          <Text as="p">{error.message}</Text>
          <Text as="p" variant="body-small">
            {hint}
          </Text>
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
      <Text as="h3" variant="title-small">
        {title}
      </Text>
      {children ? <Text as="p">{children}</Text> : null}
      {action}
    </Flex>
  );
}
