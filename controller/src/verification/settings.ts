import type { Application, PromotionFlow, VerificationCheck, VerificationOnFailure } from '@kpromo/api';
import { parseDuration } from '../policy/duration.js';

/** A stage's verification with its defaults applied, plus the app's own checks. */
export interface VerificationSettings {
  checks: VerificationCheck[];
  windowMs: number;
  intervalMs: number;
  failureLimit: number;
  minSamples: number;
  onFailure: VerificationOnFailure;
  /** The stage's governed ServiceAccount for its job checks; none: no token in their pods. */
  jobServiceAccount?: string;
}

export const VERIFICATION_DEFAULTS = {
  window: '5m',
  interval: '30s',
  failureLimit: 0,
  minSamples: 3,
  onFailure: 'stop',
} as const;

/**
 * Pure: what an app must prove in `environment` under `flow`: the stage's checks and the
 * Application's own for that environment. An app adds evidence, it never removes a stage's check
 * (a stage check and an app check of the same name both run; the app's is shown as app/<name>), and
 * the stage alone sets window, interval, limits and onFailure: a team cannot loosen the release's policy.
 * Undefined when nothing is to be verified.
 */
export function verificationFor(
  flow: PromotionFlow,
  app: Application,
  environment: string,
): VerificationSettings | undefined {
  const stage = flow.spec.stages.find((s) => s.environment === environment)?.verification;
  const own = app.spec.verification;
  const appChecks =
    own && (!own.environments || own.environments.includes(environment))
      ? own.checks.map((c) => (stage?.checks.some((s) => s.name === c.name) ? { ...c, name: `app/${c.name}` } : c))
      : [];
  const checks = [...(stage?.checks ?? []), ...appChecks];
  if (!checks.length) return undefined;
  return {
    checks,
    windowMs: parseDuration(stage?.window ?? VERIFICATION_DEFAULTS.window),
    intervalMs: parseDuration(stage?.interval ?? VERIFICATION_DEFAULTS.interval),
    failureLimit: stage?.failureLimit ?? VERIFICATION_DEFAULTS.failureLimit,
    minSamples: stage?.minSamples ?? VERIFICATION_DEFAULTS.minSamples,
    onFailure: stage?.onFailure ?? VERIFICATION_DEFAULTS.onFailure,
    ...(stage?.jobServiceAccount ? { jobServiceAccount: stage.jobServiceAccount } : {}),
  };
}
