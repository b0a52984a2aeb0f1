import { Flex, Text } from '@backstage/ui';
import type { AppProgress } from '@kpromo/plugin-promotions-react';

type Verification = NonNullable<AppProgress['verification']>;
type Check = Verification['checks'][number];

const VERDICT_COLOR: Record<string, string> = {
  Passed: 'light-dark(#116932, #86efac)',
  Failed: 'light-dark(#991919, #fca5a5)',
  Inconclusive: 'light-dark(#92310a, #fdba74)',
  Running: 'light-dark(#173da6, #a3cfff)',
};

/** The bound a prometheus check's condition names ("≤ 0.05"), drawn as a line on its chart. */
export function thresholdOf(condition: string | undefined): number | undefined {
  const m = condition?.match(/^[≤≥] (-?[0-9.e+-]+)(?: and|$)/);
  return m ? Number(m[1]) : undefined;
}

/**
 * The measurements of one check over the window as a small line chart, with the check's bound as a
 * dashed line; failed measurements are red dots. A text alternative lists the values.
 */
export function Sparkline({ check, width = 140, height = 32 }: { check: Check; width?: number; height?: number }) {
  const pts = (check.samples ?? []).filter((s) => typeof s.value === 'number');
  if (pts.length === 0) return null;
  const values = pts.map((s) => s.value as number);
  const bound = thresholdOf(check.condition);
  const all = bound === undefined ? values : [...values, bound];
  const lo = Math.min(...all);
  const hi = Math.max(...all);
  const span = hi - lo || 1;
  const x = (i: number) => (pts.length === 1 ? width / 2 : 2 + (i * (width - 4)) / (pts.length - 1));
  const y = (v: number) => height - 3 - ((v - lo) / span) * (height - 6);
  const line = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  const label = `${check.name}: ${values.join(', ')}${check.condition ? ` (must be ${check.condition})` : ''}`;
  return (
    <svg width={width} height={height} role="img" aria-label={label} data-testid={`chart-${check.name}`}>
      <title>{label}</title>
      {bound !== undefined ? (
        <line
          x1={0}
          x2={width}
          y1={y(bound)}
          y2={y(bound)}
          stroke="currentColor"
          strokeOpacity={0.5}
          strokeDasharray="3 3"
        />
      ) : null}
      <polyline points={line} fill="none" stroke={VERDICT_COLOR[check.verdict] ?? 'currentColor'} strokeWidth={1.5} />
      {pts.map((s, i) =>
        s.ok === false ? (
          <circle key={s.at} cx={x(i)} cy={y(s.value as number)} r={2.5} fill={VERDICT_COLOR.Failed} />
        ) : null,
      )}
    </svg>
  );
}

const last = (c: Check) => [...(c.samples ?? [])].reverse().find((s) => typeof s.value === 'number')?.value;

/** Each check of an app's verification: its query, condition, values over the window and verdict. */
export function VerificationChecks({ verification, app }: { verification: Verification; app: string }) {
  return (
    <Flex direction="column" gap="2" data-testid={`verification-${app}`}>
      <Text variant="body-small" color="secondary">
        Verification {verification.verdict.toLowerCase()}
        {verification.verdict === 'Running'
          ? ` until ${new Date(verification.endsAt).toISOString().slice(11, 19)} UTC`
          : ''}
        {verification.onFailure ? ` · on failure: ${verification.onFailure}` : ''}
      </Text>
      {verification.checks.map((c) => (
        <Flex key={c.name} direction="column" gap="0" data-testid={`check-${app}-${c.name}`}>
          <Flex gap="2" align="center">
            <Text variant="body-small" weight="bold">
              {c.name}
            </Text>
            <Text variant="body-small" style={{ color: VERDICT_COLOR[c.verdict] }}>
              {c.verdict}
            </Text>
            {last(c) !== undefined ? (
              <Text variant="body-small">
                last {last(c)}
                {c.condition ? `, must be ${c.condition}` : ''}
              </Text>
            ) : c.condition ? (
              <Text variant="body-small">must be {c.condition}</Text>
            ) : null}
            {c.durationSeconds !== undefined ? <Text variant="body-small">ran {c.durationSeconds}s</Text> : null}
          </Flex>
          <Sparkline check={c} />
          {c.query ? (
            <code style={{ fontSize: 11, wordBreak: 'break-all' }} title="query as measured">
              {c.query}
            </code>
          ) : null}
          {c.message ? (
            <Text variant="body-small" color="secondary">
              {c.message}
            </Text>
          ) : null}
          {c.output ? (
            <pre
              style={{ fontSize: 11, margin: 0, whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}
              title="the tail of the Job's log"
              data-testid={`output-${app}-${c.name}`}
            >
              {c.output}
            </pre>
          ) : null}
        </Flex>
      ))}
    </Flex>
  );
}
