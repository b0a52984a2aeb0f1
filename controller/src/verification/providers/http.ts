import type { CheckProvider } from '../../extension/checkProvider.js';
import { EgressRedirect } from '../../net/guardedFetch.js';
import { redactUrl } from '../../net/redactUrl.js';
import { healthCheckFailure } from '../../rollout/watchRollout.js';
import { renderTemplate } from '../placeholders.js';

const HTTP_CHECK_TIMEOUT_MS = 5_000;

/** http checks: a GET through the egress guard must answer expectStatus (redirects are never followed). */
export const httpProvider: CheckProvider = {
  kind: 'http',
  async measure(check, ctx) {
    const spec = check.http!;
    const expect = spec.expectStatus ?? 200;
    const url = renderTemplate(spec.url, ctx.vars, encodeURIComponent)!;
    const shown = redactUrl(url);
    try {
      const res = await ctx.egress.fetch(url, {
        method: 'GET',
        timeoutMs: HTTP_CHECK_TIMEOUT_MS,
        maxBodyBytes: 0,
        redirects: expect >= 300 && expect < 400 ? 'return' : 'error',
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
      const ok = res.status === expect;
      return {
        query: shown,
        value: res.status,
        ok,
        ...(ok ? {} : { message: `GET ${shown} answered ${res.status} (expected ${expect})` }),
      };
    } catch (e) {
      if (e instanceof EgressRedirect)
        return { query: shown, value: e.status, ok: false, message: healthCheckFailure(url, expect, e) };
      return { query: shown, ok: false, message: healthCheckFailure(url, expect, e) };
    }
  },
};
