import type { ReleaseEvent } from '../extension/notificationProvider.js';

/** How an event reads in chat: its colour/state family. */
export type EventTone = 'success' | 'failure' | 'pending' | 'info';

/** Provider-neutral wording of one release event; each provider lays it out in its own format. */
export interface EventSummary {
  /** One line, e.g. "cart v1.2.0 promoted to production". */
  headline: string;
  tone: EventTone;
  /** "<namespace>/<plan>". */
  plan: string;
  /** Label/value pairs in display order (values may be long: providers truncate to their limits). */
  facts: Array<{ name: string; value: string }>;
  /** The event's free text (a failure reason, why a plan waits), when any. */
  message?: string;
}

const TONES: Record<ReleaseEvent['type'], EventTone> = {
  PlanApproved: 'pending',
  PlanWaiting: 'pending',
  AppPromoted: 'success',
  AppFailed: 'failure',
  PlanComplete: 'success',
  PlanIncomplete: 'failure',
  PlanRolledBack: 'info',
  VerificationFailed: 'failure',
  WaveStarted: 'pending',
  WaveWaiting: 'pending',
  WaveSucceeded: 'success',
  WaveFailed: 'failure',
  DriftDetected: 'failure',
};

/**
 * A digest as chat shows it: the first 12 hex digits without `sha256:` (the full one is in the
 * facts). Not the contract's shortDigest (which keeps `sha256:`): this is part of the Slack, Discord
 * and Teams payloads receivers already get, asserted in the providers' tests.
 */
export const chatDigest = (d: string) => d.replace(/^sha256:/, '').slice(0, 12);

export function summarizeEvent(e: ReleaseEvent): EventSummary {
  const plan = `${e.namespace}/${e.plan}`;
  const app = e.application ? `${e.application}${e.tag ? ` ${e.tag}` : ''}` : undefined;
  const route = `${e.from} → ${e.to}`;
  const headline = ((): string => {
    switch (e.type) {
      case 'PlanApproved':
        return `Plan ${plan} approved: ${route}`;
      case 'PlanWaiting':
        return `Plan ${plan} waiting: ${route}`;
      case 'AppPromoted':
        return `${app ?? 'An application'} promoted to ${e.to}`;
      case 'AppFailed':
        return `${app ?? 'An application'} failed in ${e.to}`;
      case 'PlanComplete':
        return `Plan ${plan} complete: ${route}`;
      case 'PlanIncomplete':
        return `Plan ${plan} incomplete: ${route}`;
      case 'PlanRolledBack':
        return `Plan ${plan} rolled back in ${e.to}`;
      case 'VerificationFailed':
        return `${app ?? 'An application'} failed verification in ${e.to}`;
      case 'WaveStarted':
        return `Plan ${plan}: wave ${e.wave} of ${e.to} started`;
      case 'WaveWaiting':
        return `Plan ${plan}: wave ${e.wave} of ${e.to} waits to be continued`;
      case 'WaveSucceeded':
        return `Plan ${plan}: wave ${e.wave} of ${e.to} succeeded`;
      case 'WaveFailed':
        return `Plan ${plan}: wave ${e.wave} of ${e.to} failed`;
      case 'DriftDetected':
        return `${e.application ?? 'An application'} in ${e.to} runs ${e.tag ?? e.digest ?? 'another version'}, which kpromo did not deliver`;
    }
  })();
  const facts = [
    { name: 'Plan', value: plan },
    { name: 'Flow', value: e.flow },
    { name: 'Stage', value: route },
    ...(e.wave ? [{ name: 'Wave', value: e.wave }] : []),
    ...(e.clusters?.length ? [{ name: 'Clusters', value: e.clusters.join(', ') }] : []),
    ...(e.application ? [{ name: 'Application', value: e.application }] : []),
    ...(e.tag ? [{ name: 'Tag', value: e.tag }] : []),
    ...(e.digest ? [{ name: 'Digest', value: e.digest }] : []),
  ];
  return { headline, tone: TONES[e.type], plan, facts, ...(e.message ? { message: e.message } : {}) };
}

/** At most `max` characters (an ellipsis marks the cut), counting UTF-16 units as the providers' limits do. */
export function truncate(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, Math.max(0, max - 1))}…`;
}
