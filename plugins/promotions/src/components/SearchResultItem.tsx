import type { ResultHighlight, SearchDocument } from '@backstage/plugin-search-common';
import { Flex, Link, Text } from '@backstage/ui';
import { PhaseBadge, type PhaseName, StatusPill } from '@kpromo/plugin-promotions-react';
import type { ReactNode } from 'react';

/**
 * A kpromo search result (the example portal's collator): what it is, a plan's phase, the text.
 * Rendered inside the search page's own list item, so it is no list item itself.
 */
export function KpromoSearchResultListItem(props: {
  result?: SearchDocument;
  highlight?: ResultHighlight;
  rank?: number;
  icon?: ReactNode;
}) {
  const doc = props.result as (SearchDocument & { kind?: string; phase?: string; namespace?: string }) | undefined;
  if (!doc) return null;
  const kind = doc.kind === 'PromotionPlan' ? 'Promotion plan' : doc.kind;
  return (
    <Flex gap="3" align="start" style={{ width: '100%' }} data-testid="kpromo-search-result">
      {props.icon ? <span aria-hidden>{props.icon}</span> : null}
      <Flex direction="column" gap="1" style={{ minWidth: 0 }}>
        <Flex gap="2" align="center" style={{ flexWrap: 'wrap' }}>
          <Link href={doc.location} weight="bold">
            {doc.title}
          </Link>
          {kind ? <StatusPill tone="neutral">{kind}</StatusPill> : null}
          {doc.phase ? <PhaseBadge phase={doc.phase as PhaseName} /> : null}
        </Flex>
        <Text variant="body-small">{doc.text}</Text>
      </Flex>
    </Flex>
  );
}
