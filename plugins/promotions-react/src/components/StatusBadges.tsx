import { ButtonIcon, Text } from '@backstage/ui';
import { type CSSProperties, type ReactNode, useState } from 'react';
import { shortDigest } from '../format';
import { type DeliveredDrift, deliveredDriftText } from '../matrix';
import type { AppPhase, EnvironmentVersion, PromotionPlan, WaveProgress } from '../types';

type Health = EnvironmentVersion['health'];
/** `restored`: a rollback that finished, distinct from `warning` (a plan whose changes were undone). */
export type Tone = 'success' | 'warning' | 'danger' | 'info' | 'neutral' | 'restored';

const HEALTH_TONE: Record<Health, Tone> = {
  Healthy: 'success',
  Progressing: 'info',
  Degraded: 'danger',
  Missing: 'warning',
  Unknown: 'neutral',
};

const PHASE_TONE: Record<string, Tone> = {
  Pending: 'neutral',
  Waiting: 'neutral',
  Soaking: 'info',
  Copying: 'info',
  Writing: 'info',
  RollingOut: 'info',
  Promoting: 'info',
  Succeeded: 'success',
  Complete: 'success',
  Failed: 'danger',
  Incomplete: 'warning',
  RolledBack: 'warning',
  Halted: 'warning',
};

/**
 * Text and background per tone; every pair has a contrast of at least 7:1 in the light and the dark
 * theme (WCAG AA asks 4.5:1). Backstage UI's tokens where it has them.
 */
const TONE_STYLE: Record<Tone, { color: string; background: string; border: string }> = {
  success: {
    color: 'var(--bui-fg-success-on-bg, light-dark(#116932, #86efac))',
    background: 'var(--bui-bg-success, light-dark(#dcfce7, #042713))',
    border: 'light-dark(#86d9a2, #1f6b3b)',
  },
  warning: {
    color: 'var(--bui-fg-warning-on-bg, light-dark(#92310a, #fdba74))',
    background: 'var(--bui-bg-warning, light-dark(#ffedd5, #302008))',
    border: 'light-dark(#f3b27a, #7c4903)',
  },
  danger: {
    color: 'var(--bui-fg-danger-on-bg, light-dark(#991919, #fca5a5))',
    background: 'var(--bui-bg-danger, light-dark(#ffe2e2, #300c0c))',
    border: 'light-dark(#f5a3a3, #7a2020)',
  },
  info: {
    color: 'var(--bui-fg-info-on-bg, light-dark(#173da6, #a3cfff))',
    background: 'var(--bui-bg-info, light-dark(#dbeafe, #132049))',
    border: 'light-dark(#9cc0f0, #2b4a8a)',
  },
  neutral: {
    color: 'var(--bui-fg-primary, light-dark(#000, #fff))',
    background: 'var(--bui-bg-neutral-2, light-dark(#ececec, #4a4a4a))',
    border: 'light-dark(#c9c9c9, #666)',
  },
  restored: {
    color: 'light-dark(#5b21b6, #ddd6fe)',
    background: 'light-dark(#ede9fe, #2e1065)',
    border: 'light-dark(#c4b5fd, #6d28d9)',
  },
};

/** A small label in a tone: status text that never relies on colour alone and stays readable. */
export function StatusPill({
  tone,
  children,
  title,
  ...rest
}: { tone: Tone; children: ReactNode; title?: string } & Record<`data-${string}`, string | undefined>) {
  const t = TONE_STYLE[tone];
  const style: CSSProperties = {
    display: 'inline-flex',
    alignItems: 'center',
    gap: 4,
    padding: '1px 8px',
    borderRadius: 999,
    fontSize: 12,
    lineHeight: '18px',
    fontWeight: 600,
    whiteSpace: 'nowrap',
    color: t.color,
    background: t.background,
    border: `1px solid ${t.border}`,
  };
  return (
    <span style={style} title={title} data-tone={tone} {...rest}>
      {children}
    </span>
  );
}

/**
 * A status mark for dense grids (an application in a cluster): a small square in the tone's colours
 * with a glyph, so it never relies on colour alone; `label` is what screen readers say, `title` what
 * a hover shows (the label unless given).
 */
export function StatusMark({
  tone,
  glyph,
  label,
  title,
  ...rest
}: { tone: Tone; glyph: string; label: string; title?: string } & Record<`data-${string}`, string | undefined>) {
  const t = TONE_STYLE[tone];
  const style: CSSProperties = {
    display: 'inline-flex',
    alignItems: 'center',
    justifyContent: 'center',
    boxSizing: 'border-box',
    width: 14,
    height: 14,
    borderRadius: 3,
    fontSize: 10,
    lineHeight: '12px',
    fontWeight: 700,
    color: t.color,
    background: t.background,
    border: `1px solid ${t.border}`,
  };
  return (
    <span role="img" aria-label={label} title={title ?? label} style={style} data-tone={tone} {...rest}>
      {glyph}
    </span>
  );
}

export function HealthBadge({ health }: { health: Health }) {
  return (
    <StatusPill tone={HEALTH_TONE[health] ?? 'neutral'} data-health={health}>
      {health}
    </StatusPill>
  );
}

/** An application's, a plan's or a fleet plan's wave's phase. */
export type PhaseName = AppPhase | NonNullable<PromotionPlan['status']>['phase'] | WaveProgress['phase'];

/** The tone of a plan or app phase; a rollback plan that ended RolledBack finished its job: `restored`. */
export function phaseTone(phase: PhaseName | undefined, action?: 'promote' | 'rollback'): Tone {
  const p = phase ?? 'Pending';
  if (p === 'RolledBack' && action === 'rollback') return 'restored';
  return PHASE_TONE[p] ?? 'neutral';
}

export function PhaseBadge({ phase, action }: { phase: PhaseName | undefined; action?: 'promote' | 'rollback' }) {
  const p = phase ?? 'Pending';
  return (
    <StatusPill tone={phaseTone(p, action)} data-phase={p}>
      {p}
    </StatusPill>
  );
}

async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

function CopyIcon() {
  return (
    <svg viewBox="0 0 24 24" width="14" height="14" fill="currentColor" aria-hidden focusable="false">
      <path d="M16 1H4a2 2 0 0 0-2 2v14h2V3h12V1zm3 4H8a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h11a2 2 0 0 0 2-2V7a2 2 0 0 0-2-2zm0 16H8V7h11v14z" />
    </svg>
  );
}

/**
 * A digest as people can read it without hovering: `sha256:` and 12 hex digits in monospace, and a
 * button copying the full digest (announced to screen readers).
 */
export function DigestText({ digest }: { digest: string }) {
  const [copied, setCopied] = useState(false);
  const short = shortDigest(digest) ?? digest;
  return (
    <span style={{ display: 'inline-flex', alignItems: 'center', gap: 2 }} data-testid="digest">
      <code
        style={{ fontSize: 12, fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace' }}
        data-digest={digest}
        title={digest}
      >
        {short}
      </code>
      <ButtonIcon
        size="small"
        variant="tertiary"
        aria-label={`Copy digest ${short}`}
        icon={<CopyIcon />}
        onPress={async () => {
          setCopied(await copyText(digest));
          setTimeout(() => setCopied(false), 2000);
        }}
      />
      <span aria-live="polite" style={{ fontSize: 12 }}>
        {copied ? 'copied' : ''}
      </span>
    </span>
  );
}

/** Tag, short digest (copyable) and health of one application in one environment; drift labelled. */
export function VersionCell({
  version,
  drift,
  outside,
}: {
  version?: EnvironmentVersion;
  drift?: boolean;
  /** What kpromo found running there that it did not deliver (docs/drift.md). */
  outside?: readonly DeliveredDrift[];
}) {
  if (!version || (!version.tag && !version.digest)) {
    return (
      <Text variant="body-small" color="secondary">
        not deployed
      </Text>
    );
  }
  return (
    <span
      data-drift={drift ? 'true' : undefined}
      style={{ display: 'inline-flex', flexDirection: 'column', gap: 2, alignItems: 'flex-start' }}
    >
      <span style={{ display: 'inline-flex', gap: 6, alignItems: 'center', flexWrap: 'wrap' }}>
        <Text variant="body-small" weight="bold">
          {version.tag ?? shortDigest(version.digest)}
        </Text>
        <HealthBadge health={version.health} />
        {drift ? (
          <StatusPill
            tone="warning"
            data-testid="drift"
            title="Runs something else than the environment before it: a release waiting to be promoted, or a hotfix"
          >
            drift
          </StatusPill>
        ) : null}
        {outside?.length ? (
          <StatusPill tone="danger" data-testid="changed-outside" title={outside.map(deliveredDriftText).join('\n')}>
            changed outside kpromo
          </StatusPill>
        ) : null}
      </span>
      {version.digest ? <DigestText digest={version.digest} /> : null}
      {version.message && version.health !== 'Healthy' ? (
        <Text variant="body-small" color="secondary">
          {version.message}
        </Text>
      ) : null}
    </span>
  );
}
