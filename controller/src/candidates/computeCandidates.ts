import type { Application, ApplicationSelector, Candidate, EnvironmentVersion, PromotionFlow } from '@kpromo/api';

export const DEFAULT_TAG_PATTERN = '^v\\d+\\.\\d+\\.\\d+';

const globCache = new Map<string, RegExp>();

/** Glob with `*` and `?` only, anchored. Compiled once per glob: selectors are evaluated per app. */
export function globToRegExp(glob: string): RegExp {
  let re = globCache.get(glob);
  if (!re) {
    const esc = glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.');
    re = new RegExp(`^${esc}$`);
    if (globCache.size > 10_000) globCache.clear();
    globCache.set(glob, re);
  }
  return re;
}

export function matchesSelector(app: Application, sel: ApplicationSelector | undefined): boolean {
  if (!sel) return true;
  if (sel.applications?.length && !sel.applications.some((g) => globToRegExp(g).test(app.metadata.name))) return false;
  if (sel.teams?.length && !sel.teams.includes(app.spec.owner)) return false;
  if (sel.matchLabels) {
    const labels = { ...(app.metadata.labels ?? {}), ...(app.spec.labels ?? {}) };
    for (const [k, v] of Object.entries(sel.matchLabels)) if (labels[k] !== v) return false;
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
  reason: 'NotSelected' | 'NoSourceVersion' | 'SourceNotHealthy' | 'TagPatternMismatch' | 'UpToDate' | 'NoDigest';
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

function compile(pattern: string, what: string): RegExp {
  try {
    return new RegExp(pattern);
  } catch (e) {
    throw new Error(`${what}: invalid regular expression ${JSON.stringify(pattern)}: ${(e as Error).message}`);
  }
}

/**
 * Pure: release candidates from stage `from` to the next stage `to` of a flow. An app is a
 * candidate when it matches the flow selector and filter, runs a healthy version in `from` whose tag
 * matches the tag pattern, and `to` runs a different digest (or nothing).
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
    throw new Error(
      `PromotionFlow ${flow.metadata.name}: ${from} -> ${to} is not a stage transition; valid: ${stagePairs(flow)
        .map((p) => `${p.from} -> ${p.to}`)
        .join(', ')}`,
    );
  }
  const tagRe = compile(flow.spec.tagPattern ?? DEFAULT_TAG_PATTERN, `PromotionFlow ${flow.metadata.name} tagPattern`);
  const extraTagRe = filter.tagPattern ? compile(filter.tagPattern, 'filter tagPattern') : undefined;
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
    if (!tagRe.test(src.tag) || (extraTagRe && !extraTagRe.test(src.tag))) {
      skipped.push({
        application: name,
        reason: 'TagPatternMismatch',
        message: `tag ${src.tag} does not match the tag pattern`,
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
    if (dst?.digest === src.digest) {
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
