import { Flex, Text } from '@backstage/ui';
import { approvedByText } from '@kpromo/plugin-promotions-common';
import { formatDuration, formatRelative, formatTime, shortDigest } from '../format';
import { entryChange } from '../insights';
import type { HistoryEntry } from '../types';
import { PhaseBadge } from './StatusBadges';

/**
 * Promotions and rollbacks as a timeline, newest first: when, where, what changed (tags; digest on
 * hover), result, who approved, how long it took. `show` picks the columns the context does not already say.
 */
export function ReleaseTimeline({
  entries,
  label,
  now,
  show = { application: true, environment: true },
  planHref,
}: {
  entries: HistoryEntry[];
  label: string;
  now: number;
  show?: { application?: boolean; environment?: boolean };
  planHref?: (e: HistoryEntry) => string | undefined;
}) {
  return (
    <ol aria-label={label} style={{ listStyle: 'none', margin: 0, padding: 0 }} data-testid="release-timeline">
      {entries.map((e) => {
        const where = [show.environment ? e.environment : undefined, show.application ? e.application : undefined]
          .filter(Boolean)
          .join(' · ');
        const href = planHref?.(e);
        return (
          <li
            key={e.key}
            style={{ borderLeft: '3px solid var(--bui-border, #bbb)', padding: '4px 0 8px 12px', marginLeft: 4 }}
          >
            <Flex gap="2" align="center" style={{ flexWrap: 'wrap' }}>
              <Text variant="body-small" color="secondary">
                <time dateTime={e.finishedAt} title={formatTime(e.finishedAt)}>
                  {formatRelative(e.finishedAt, now)}
                </time>
              </Text>
              {where ? <Text weight="bold">{where}</Text> : null}
              <Text title={[e.from?.digest, e.to.digest].filter(Boolean).map(shortDigest).join(' → ')}>
                {entryChange(e)}
              </Text>
              <PhaseBadge phase={e.result} action={e.action} />
            </Flex>
            <Text variant="body-small" color="secondary">
              {[
                approvedByText(e),
                e.durationSeconds !== undefined ? `took ${formatDuration(e.durationSeconds * 1000)}` : undefined,
                e.result === 'Failed' && e.reason ? e.reason : undefined,
              ]
                .filter(Boolean)
                .join(' · ')}
              {href ? (
                <>
                  {' · '}
                  <a href={href}>plan {e.plan}</a>
                </>
              ) : (
                ` · plan ${e.plan}`
              )}
            </Text>
          </li>
        );
      })}
    </ol>
  );
}
