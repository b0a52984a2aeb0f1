import { Flex, Link, Text } from '@backstage/ui';
import { type PlanProgress, safeHttpUrl, shortSha } from '@kpromo/plugin-promotions-react';

type PullRequest = NonNullable<PlanProgress['pullRequest']>;

const STATE: Record<NonNullable<PullRequest['state']>, string> = {
  open: 'open',
  closed: 'closed without being merged',
  merged: 'merged',
};

/**
 * The pull request a plan promotes through (Environment delivery.git.pullRequest): a link to it,
 * its state and the merge, each review and whether it counts toward the stage's approval policy
 * (and why not), and the controller's word on it. Logins, reasons and the message come from the
 * forge and the cluster: rendered as text; the link only when the URL is http(s).
 */
export function PlanPullRequest({ pr }: { pr: PullRequest }) {
  const href = safeHttpUrl(pr.url);
  const name = pr.number !== undefined ? `Pull request #${pr.number}` : 'Pull request';
  const counting = pr.reviews.filter((r) => r.counts).length;
  return (
    <Flex direction="column" gap="1" data-testid="pull-request">
      <Text as="p" variant="body-small" data-testid="pull-request-head">
        {href ? (
          <Link href={href} target="_blank" rel="noopener noreferrer" variant="body-small" title={href}>
            {name}
          </Link>
        ) : (
          <strong>{name}</strong>
        )}
        {pr.number === undefined ? ' not opened yet' : ` ${STATE[pr.state ?? 'open']}`}
        {` (${pr.repository}: ${pr.branch} into ${pr.base})`}
        {pr.merged ? `, merged by ${pr.merged.by} as ${shortSha(pr.merged.commit)}` : ''}
        {pr.reviews.length ? ` · ${counting} of ${pr.reviews.length} reviews count` : ' · no reviews yet'}
      </Text>
      {pr.reviews.length ? (
        <ul data-testid="pull-request-reviews" style={{ margin: 0, paddingLeft: 20 }}>
          {pr.reviews.map((r) => (
            <li key={`${r.login}/${r.merger ? 'merge' : 'review'}`}>
              <Text variant="body-small">
                {r.login} ({r.user}) {r.merger ? 'merged' : r.state}:{' '}
                {r.counts ? 'counts' : `does not count${r.why ? ` (${r.why})` : ''}`}
              </Text>
            </li>
          ))}
        </ul>
      ) : null}
      {pr.message ? (
        <Text as="p" variant="body-small" color="secondary" data-testid="pull-request-message">
          {pr.message}
        </Text>
      ) : null}
    </Flex>
  );
}
