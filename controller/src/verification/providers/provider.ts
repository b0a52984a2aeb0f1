import type { Application, Environment, VerificationCheck } from '@kpromo/api';
import type { KubeRest } from '../../kube/rest.js';
import type { Egress } from '../../net/guardedFetch.js';
import type { CheckVars } from '../placeholders.js';
import type { Measurement } from '../verdict.js';

/** What a provider measures with: the target Environment and app, and the version under test. */
export interface CheckContext {
  env: Environment;
  app: Application;
  vars: CheckVars;
  /** The target Environment's cluster (the Argo analysis provider reads AnalysisRuns there). */
  client(): Promise<KubeRest>;
  /** SSRF guard for URLs from custom resources (Environment metrics URL, http checks). */
  egress: Egress;
  signal?: AbortSignal;
}

/**
 * One kind of verification check. `measure` never throws for what the measured system answered
 * (no data, a bad status): it returns a Measurement whose message says what happened, so the
 * verdict decides; it throws only when measuring itself is impossible (then the round is retried).
 */
export interface CheckProvider {
  kind: 'prometheus' | 'http' | 'analysis';
  applies(check: VerificationCheck): boolean;
  measure(check: VerificationCheck, ctx: CheckContext): Promise<Measurement>;
}
