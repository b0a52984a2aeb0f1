import { Flex, Text } from '@backstage/ui';
import {
  DORA_HELP,
  DORA_KEYS,
  DORA_TITLES,
  type DoraKeyName,
  doraDetail,
  doraText,
  doraValue,
  groupLabel,
} from '../insights';
import type { DoraGroup, DoraKeys } from '../types';

const TILE = {
  border: '1px solid var(--bui-border, #ccc)',
  borderRadius: 6,
  minWidth: 200,
  flex: '1 1 200px',
} as const;

/** The four keys as tiles: value, what it counts, and what it means. */
export function DoraSummary({ keys, label }: { keys: DoraKeys; label: string }) {
  return (
    <section aria-label={label}>
      <Flex gap="3" style={{ flexWrap: 'wrap' }}>
        {DORA_KEYS.map((k) => (
          <Flex key={k} direction="column" gap="1" p="3" style={TILE} data-testid={`dora-${k}`}>
            <Text variant="body-small" color="secondary">
              {DORA_TITLES[k]}
            </Text>
            <Text variant="title-small" weight="bold">
              {doraText(keys, k)}
            </Text>
            <Text variant="body-small" color="secondary">
              {doraDetail(keys, k)} · {DORA_HELP[k]}
            </Text>
          </Flex>
        ))}
      </Flex>
    </section>
  );
}

const ROW = 26;
const LABEL_W = 220;
const BAR_W = 260;
const VALUE_W = 110;

/**
 * One key across groups as horizontal bars (plain SVG, no charting library): longest bar = largest
 * value; unknown values have no bar and say so. The chart's accessible name lists every value.
 */
export function DoraBarChart({ groups, keyName }: { groups: DoraGroup[]; keyName: DoraKeyName }) {
  const values = groups.map((g) => doraValue(g, keyName));
  const max = Math.max(...values.map((v) => v ?? 0), keyName === 'changeFailureRate' ? 1 : 0) || 1;
  const title = DORA_TITLES[keyName];
  const summary = groups.map((g) => `${groupLabel(g)}: ${doraText(g, keyName)}`).join('; ');
  const height = Math.max(1, groups.length) * ROW + 4;
  return (
    <figure style={{ margin: 0 }} data-testid={`dora-chart-${keyName}`}>
      <Text as="h4" variant="body-medium" weight="bold">
        {title}
      </Text>
      <svg
        role="img"
        aria-label={`${title}: ${summary || 'no deployments'}`}
        width="100%"
        viewBox={`0 0 ${LABEL_W + BAR_W + VALUE_W} ${height}`}
        style={{ maxWidth: LABEL_W + BAR_W + VALUE_W, display: 'block' }}
      >
        {groups.map((g, i) => {
          const v = values[i];
          const y = i * ROW + 2;
          const w = v === undefined ? 0 : Math.max(2, (v / max) * BAR_W);
          return (
            <g key={groupLabel(g) + g.namespace}>
              <text x={0} y={y + 16} fontSize="12" fill="currentColor">
                {groupLabel(g).slice(0, 34)}
              </text>
              <rect
                x={LABEL_W}
                y={y + 4}
                width={w}
                height={ROW - 10}
                rx={3}
                fill={keyName === 'changeFailureRate' && (v ?? 0) > 0.15 ? '#c2410c' : '#1d4ed8'}
              />
              <text x={LABEL_W + w + 6} y={y + 16} fontSize="12" fill="currentColor">
                {doraText(g, keyName)}
              </text>
            </g>
          );
        })}
      </svg>
    </figure>
  );
}
