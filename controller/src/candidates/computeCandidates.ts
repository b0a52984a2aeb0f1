import type { Application, ApplicationSelector, Candidate, EnvironmentVersion, PromotionFlow } from '@kpromo/api';
import { compileTagPattern, globMatcher, InputError, type Matcher, PatternError } from '@kpromo/contract';

export { InputError, type Matcher, PatternError, tagPatternProblem } from '@kpromo/contract';

export const DEFAULT_TAG_PATTERN = '^v\\d+\\.\\d+\\.\\d+';

/**
 * Glob with `*` and `?` only, anchored, as a matcher with `test` (linear time, no RegExp; see
 * pattern.ts). Kept under its old name for callers; throws {@link PatternError} for a bad glob.
 */
export function globToRegExp(glob: string): Matcher {
  return globMatcher(glob);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Whether an app is selected. Throws {@link InputError} (naming the field) for a selector of the
 * wrong shape, e.g. from an unvalidated API body, instead of failing with a TypeError.
 */
export function matchesSelector(app: Application, sel: ApplicationSelector | undefined): boolean {
  if (!sel) return true;
  const { applications, teams, matchLabels } = sel;
  if (applications !== undefined && !Array.isArray(applications))
    throw new InputError('applications', 'applications: must be a list of names or globs');
  if (teams !== undefined && !Array.isArray(teams))
    throw new InputError('teams', 'teams: must be a list of team names');
  if (matchLabels !== undefined && !isPlainObject(matchLabels))
    throw new InputError('matchLabels', 'matchLabels: must be an object of label names to values');
  if (applications?.length && !applications.some((g) => globMatcher(g, 'applications').test(app.metadata.name)))
    return false;
  if (teams?.length && !teams.includes(app.spec.owner)) return false;
  if (matchLabels) {
    const labels: Record<string, string> = Object.assign(
      Object.create(null),
      app.metadata.labels ?? {},
      app.spec.labels ?? {},
    );
    for (const [k, v] of Object.entries(matchLabels)) {
      if (typeof v !== 'string') throw new InputError('matchLabels', `matchLabels.${k}: must be a string`);
      if (!Object.hasOwn(labels, k) || labels[k] !== v) return false;
    }
  }
  return true;
}

/** Extra filters a caller (API, CLI, MCP) can narrow a plan with, on top of the flow selector. */
export interface CandidateFilter {
  applications?: string[];
  teams?: string[];
  matchLabels?: Record<string, string>;
  tagPattern?: string;
}

export interface SkippedApp {
  application: string;
  reason:
    | 'NotSelected'
    | 'NoSourceVersion'
    | 'SourceNotHealthy'
    | 'TagPatternMismatch'
    | 'UpToDate'
    | 'NoDigest'
    | 'SourceDrift';
  message: string;
}

export interface CandidateResult {
  from: string;
  to: string;
  candidates: Candidate[];
  skipped: SkippedApp[];
}

/** Versions per application and environment, as read from the cache. */
export type VersionLookup = (app: Application, environment: string) => EnvironmentVersion | undefined;

/** Stage pairs (N, N+1) of a flow. */
export function stagePairs(flow: PromotionFlow): Array<{ from: string; to: string }> {
  const s = flow.spec.stages;
  return s.slice(0, -1).map((st, i) => ({ from: st.environment, to: s[i + 1].environment }));
}

export function isAdjacent(flow: PromotionFlow, from: string, to: string): boolean {
  return stagePairs(flow).some((p) => p.from === from && p.to === to);
}

/** The flow's tag pattern; a bad one is the flow's problem, named so. */
export function flowTagPattern(flow: PromotionFlow): Matcher {
  try {
    return compileTagPattern(flow.spec.tagPattern ?? DEFAULT_TAG_PATTERN, 'tagPattern');
  } catch (e) {
    const pe = e as PatternError;
    throw new PatternError('spec.tagPattern', `PromotionFlow ${flow.metadata.name}: ${pe.message}`);
  }
}

/**
 * Pure: release candidates from stage `from` to the next stage `to` of a flow. An app is a
 * candidate when it matches the flow selector and filter, runs a healthy version in `from` whose tag
 * matches the tag pattern, and `to` runs a different digest (or nothing).
 *
 * Throws {@link InputError} (a {@link PatternError} for patterns and globs) naming the field for a
 * stage pair that is no transition of the flow, a bad tag pattern or glob, or a filter of the wrong
 * shape. Patterns are matched in linear time (RE2), so no input can stall the caller.
 */
export function computeCandidates(
  flow: PromotionFlow,
  apps: readonly Application[],
  versionOf: VersionLookup,
  from: string,
  to: string,
  filter: CandidateFilter = {},
): CandidateResult {
  if (!isAdjacent(flow, from, to)) {
    throw new InputError(
      'to',
      `PromotionFlow ${flow.metadata.name}: ${from} -> ${to} is not a stage transition; valid: ${stagePairs(flow)
        .map((p) => `${p.from} -> ${p.to}`)
        .join(', ')}`,
    );
  }
  const tagRe = flowTagPattern(flow);
  const extraTagRe =
    filter.tagPattern !== undefined && filter.tagPattern !== '' ? compileTagPattern(filter.tagPattern) : undefined;
  // Tags repeat across applications (release trains): each is matched once per answer.
  const tagMatches = new Map<string, boolean>();
  const tagOk = (tag: string) => {
    let ok = tagMatches.get(tag);
    if (ok === undefined) {
      ok = tagRe.test(tag) && (!extraTagRe || extraTagRe.test(tag));
      tagMatches.set(tag, ok);
    }
    return ok;
  };
  const extraSel: ApplicationSelector = {
    applications: filter.applications,
    teams: filter.teams,
    matchLabels: filter.matchLabels,
  };
  const candidates: Candidate[] = [];
  const skipped: SkippedApp[] = [];
  const ns = flow.metadata.namespace;
  for (const app of apps) {
    const name = app.metadata.name;
    if (ns !== undefined && app.metadata.namespace !== ns) continue;
    if (!matchesSelector(app, flow.spec.selector) || !matchesSelector(app, extraSel)) {
      skipped.push({
        application: name,
        reason: 'NotSelected',
        message: 'not selected by the flow selector or filter',
      });
      continue;
    }
    const src = versionOf(app, from);
    if (!src?.tag) {
      skipped.push({ application: name, reason: 'NoSourceVersion', message: `no tagged version running in ${from}` });
      continue;
    }
    if (src.health !== 'Healthy') {
      skipped.push({
        application: name,
        reason: 'SourceNotHealthy',
        message: `${from} is ${src.health}${src.message ? `: ${src.message}` : ''}`,
      });
      continue;
    }
    if (!tagOk(src.tag)) {
      skipped.push({
        application: name,
        reason: 'TagPatternMismatch',
        message: `tag ${src.tag} does not match the tag pattern`,
      });
      continue;
    }
    if (src.drift) {
      skipped.push({
        application: name,
        reason: 'SourceDrift',
        message: `the clusters of ${from} run different versions (${src.message ?? 'drift'}); promote from a stage whose clusters agree`,
      });
      continue;
    }
    if (!src.digest) {
      skipped.push({
        application: name,
        reason: 'NoDigest',
        message: `${from} runs ${src.tag} without a pinned digest`,
      });
      continue;
    }
    const dst = versionOf(app, to);
    // A fleet stage is up to date only when every cluster runs it: one lagging cluster is a candidate.
    if (dst?.digest === src.digest && !dst.drift) {
      skipped.push({ application: name, reason: 'UpToDate', message: `${to} already runs ${src.digest}` });
      continue;
    }
    const c: Candidate = { application: name, from: { tag: src.tag, digest: src.digest } };
    if (dst?.tag || dst?.digest)
      c.to = { ...(dst.tag ? { tag: dst.tag } : {}), ...(dst.digest ? { digest: dst.digest } : {}) };
    candidates.push(c);
  }
  candidates.sort((a, b) => a.application.localeCompare(b.application));
  return { from, to, candidates, skipped };
}
