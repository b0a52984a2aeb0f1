import type { VerificationCheck } from '@kpromo/api';
import type { CheckContext, CheckProvider, Measurement } from '../../extension/checkProvider.js';
import { EgressError } from '../../net/guardedFetch.js';
import { redactUrl } from '../../net/redactUrl.js';
import { promqlString, renderTemplate } from '../placeholders.js';

const QUERY_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 256 * 1024;

type QueryResult = { value?: number; message?: string };

/**
 * Pure: the one number of a Prometheus instant-query response (HTTP API v1: scalar, or a vector of
 * one sample), or why there is none. More than one series is a mistake in the query, said so.
 */
export function numberFromQueryResponse(body: unknown): QueryResult {
  const b = body as {
    status?: string;
    error?: string;
    errorType?: string;
    data?: { resultType?: string; result?: unknown };
  };
  if (b?.status !== 'success')
    return { message: `query failed: ${b?.errorType ?? 'error'}: ${b?.error ?? 'no detail'}` };
  const { resultType, result } = b.data ?? {};
  const num = (pair: unknown): QueryResult => {
    const raw = Array.isArray(pair) ? pair[1] : undefined;
    const v = typeof raw === 'string' ? Number(raw) : Number.NaN;
    return Number.isFinite(v) ? { value: v } : { message: `the query returned ${String(raw)}` };
  };
  if (resultType === 'scalar') return num(result);
  if (resultType === 'vector' && Array.isArray(result)) {
    if (result.length === 0) return { message: 'the query returned no series (no data yet?)' };
    if (result.length > 1)
      return { message: `the query returned ${result.length} series; aggregate it to one (e.g. sum(...))` };
    return num((result[0] as { value?: unknown }).value);
  }
  return { message: `the query returned a ${resultType ?? 'malformed'} result; an instant vector or scalar is needed` };
}

async function instantQuery(base: string, query: string, ctx: CheckContext): Promise<QueryResult> {
  const url = new URL('api/v1/query', base.endsWith('/') ? base : `${base}/`);
  try {
    const res = await ctx.egress.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ query }).toString(),
      timeoutMs: QUERY_TIMEOUT_MS,
      maxBodyBytes: MAX_RESPONSE_BYTES,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    if (res.truncated) return { message: `the answer of ${redactUrl(url)} is larger than ${MAX_RESPONSE_BYTES} bytes` };
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body.toString('utf8'));
    } catch {
      return { message: `${redactUrl(url)} answered ${res.status} without JSON` };
    }
    return numberFromQueryResponse(parsed);
  } catch (e) {
    if (e instanceof EgressError) return { message: `${redactUrl(url)}: ${e.message}` };
    throw e;
  }
}

/**
 * prometheus checks: instant queries against the target Environment's spec.metrics.prometheus.url,
 * the check's query for the new version and, with a baseline, the same for the version it replaced.
 */
export const prometheusProvider: CheckProvider = {
  kind: 'prometheus',
  async measure(check: VerificationCheck, ctx: CheckContext): Promise<Measurement> {
    const spec = check.prometheus!;
    const base = ctx.env.spec.metrics?.prometheus.url;
    if (!base)
      return {
        message: `Environment ${ctx.env.metadata.name} has no spec.metrics.prometheus.url; set it to the Prometheus that sees this environment`,
      };
    const query = renderTemplate(spec.query, ctx.vars, promqlString);
    if (query === undefined)
      return { message: 'the query names {previousVersion} and this app had no previous version' };
    const now = await instantQuery(base, query, ctx);
    let baseline: QueryResult | undefined;
    if (spec.baseline) {
      const prevVars = ctx.vars.previousVersion ? { ...ctx.vars, version: ctx.vars.previousVersion } : undefined;
      const bq = prevVars ? renderTemplate(spec.baseline.query ?? spec.query, prevVars, promqlString) : undefined;
      baseline = bq ? await instantQuery(base, bq, ctx) : { message: 'no previous version to compare with' };
    }
    const message = now.message ?? (baseline?.message ? `baseline: ${baseline.message}` : undefined);
    return {
      query,
      ...(now.value !== undefined ? { value: now.value } : {}),
      ...(baseline?.value !== undefined ? { baseline: baseline.value } : {}),
      ...(message ? { message } : {}),
    };
  },
};
