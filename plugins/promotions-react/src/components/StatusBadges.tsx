import { Badge, Text } from '@backstage/ui';
import type { AppPhase, EnvironmentVersion, PromotionPlan } from '../types';

type Health = EnvironmentVersion['health'];
type Tone = 'success' | 'warning' | 'danger' | 'info' | 'secondary';

const HEALTH_TONE: Record<Health, Tone> = {
  Healthy: 'success',
  Progressing: 'info',
  Degraded: 'danger',
  Missing: 'warning',
  Unknown: 'secondary',
};

const PHASE_TONE: Record<string, Tone> = {
  Pending: 'secondary',
  Copying: 'info',
  Writing: 'info',
  RollingOut: 'info',
  Promoting: 'info',
  Succeeded: 'success',
  Complete: 'success',
  Failed: 'danger',
  Incomplete: 'warning',
  RolledBack: 'warning',
};

const COLOR: Record<Tone, string> = {
  success: 'var(--bui-fg-success, #1a7f37)',
  warning: 'var(--bui-fg-warning, #9a6700)',
  danger: 'var(--bui-fg-danger, #cf222e)',
  info: 'var(--bui-fg-info, #0969da)',
  secondary: 'var(--bui-fg-secondary, #57606a)',
};

function Dot({ tone }: { tone: Tone }) {
  return (
    <span
      aria-hidden
      style={{
        display: 'inline-block',
        width: 8,
        height: 8,
        borderRadius: 4,
        background: COLOR[tone],
        marginRight: 6,
      }}
    />
  );
}

export function HealthBadge({ health }: { health: Health }) {
  return (
    <Badge size="small" icon={<Dot tone={HEALTH_TONE[health] ?? 'secondary'} />} data-health={health}>
      {health}
    </Badge>
  );
}

export function PhaseBadge({ phase }: { phase: AppPhase | NonNullable<PromotionPlan['status']>['phase'] | undefined }) {
  const p = phase ?? 'Pending';
  return (
    <Badge size="small" icon={<Dot tone={PHASE_TONE[p] ?? 'secondary'} />} data-phase={p}>
      {p}
    </Badge>
  );
}

/** Tag (or short digest) and health of one application in one environment. */
export function VersionCell({ version, drift }: { version?: EnvironmentVersion; drift?: boolean }) {
  if (!version || (!version.tag && !version.digest)) {
    return (
      <Text variant="body-small" color="secondary">
        not deployed
      </Text>
    );
  }
  const label = version.tag ?? version.digest?.slice(0, 19);
  return (
    <span
      data-drift={drift ? 'true' : undefined}
      title={[version.digest, version.message].filter(Boolean).join('\n') || undefined}
      style={{ display: 'inline-flex', gap: 6, alignItems: 'center', flexWrap: 'wrap' }}
    >
      <Text variant="body-small" weight="bold" color={drift ? 'warning' : 'primary'}>
        {label}
      </Text>
      <HealthBadge health={version.health} />
      {drift ? (
        <Badge size="small" data-testid="drift">
          drift
        </Badge>
      ) : null}
    </span>
  );
}
