import type { Application, Environment, VerificationCheck } from '@kpromo/api';
import type { KubeRest } from '../kube/rest.js';
import type { Egress } from '../net/guardedFetch.js';

/** What a check's query or URL may refer to: the app, where it runs, and the version under test. */
export interface CheckVars {
  application: string;
  namespace: string;
  environment: string;
  version: string;
  previousVersion?: string;
  digest: string;
}

/** One measurement of one check, as a provider returns it. */
export interface Measurement {
  /** The number measured; absent when the source had no data. */
  value?: number;
  /** The same measurement for the version that was replaced (prometheus baseline). */
  baseline?: number;
  /** Set by providers that judge themselves (http status, Argo AnalysisRuns); otherwise judged by the verdict (prometheus bounds). */
  ok?: boolean;
  /** The provider's verdict is final (an AnalysisRun that completed): no more measurements. */
  final?: boolean;
  /** The query or URL as measured (placeholders replaced); for a job check, the Job. */
  query?: string;
  message?: string;
  /** How long what the check ran took (a job check's Job), in seconds. */
  durationSeconds?: number;
  /** The tail of what the check printed (a job check's pod log), bounded; absent when there was none. */
  output?: string;
}

/**
 * The verification window a measurement belongs to, for providers that start something once per
 * window (a job check's Job): enough to name it the same way on every reconcile and every leader.
 */
export interface CheckWindow {
  plan: string;
  planUID: string;
  /** A fleet Environment: the cluster measured. */
  cluster?: string;
  startedAt: string;
  endsAt: string;
  /** The stage's failureLimit: failed attempts a check may retry. */
  failureLimit: number;
  /** The stage's governed ServiceAccount for what checks run in the target namespace (verification.jobServiceAccount). */
  serviceAccount?: string;
  /** The controller's clock for this round. */
  now: Date;
}

/** What a provider measures with: the target Environment and app, and the version under test. */
export interface CheckContext {
  env: Environment;
  app: Application;
  vars: CheckVars;
  /** The target Environment's cluster (the Argo analysis provider reads AnalysisRuns there). */
  client(): Promise<KubeRest>;
  /** SSRF guard for URLs from custom resources (Environment metrics URL, http checks): fetch through it. */
  egress: Egress;
  /** Absent where no plan's window is measured (a plugin's own tests): a job check then cannot measure. */
  window?: CheckWindow;
  signal?: AbortSignal;
}

/**
 * One kind of verification check (stage `verification.checks[]`, Application `spec.verification`).
 * A check names its provider by the field that holds its settings: `{ name, prometheus: {...} }` is
 * measured by the provider of kind `prometheus`, and the plan status shows that kind. The controller
 * calls `measure` once per interval for every check still running, in parallel; it never throws for
 * what the measured system answered (no data, a bad status): it returns a Measurement whose message
 * says what happened, so the verdict decides. It throws only when measuring itself is impossible;
 * that round then counts as no data (too few rounds with data make the check Inconclusive).
 */
export interface CheckProvider {
  /** The check field it serves (`prometheus`, `http`, `analysis`, `job`, or a plugin's own). */
  kind: string;
  measure(check: VerificationCheck, ctx: CheckContext): Promise<Measurement>;
}
