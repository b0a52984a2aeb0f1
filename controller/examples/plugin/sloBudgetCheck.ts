import type { VerificationCheck } from '@kpromo/api';
import type { CheckContext, CheckProvider } from '@kpromo/controller/plugin';

/** A check's settings under its field `sloBudget`: the field names the provider, as `prometheus:` does. */
export interface SloBudgetSettings {
  /** The SLO's id in the SLO service; `{application}` and `{environment}` are replaced. */
  slo: string;
  /** The least share of the SLO's error budget (0 to 1) that must be left while the new version runs. */
  minRemaining: number;
}

export interface SloBudgetOptions {
  /** The SLO service's API, e.g. `https://slo.example.com/api` (platform configuration, not from a custom resource). */
  baseUrl: string;
  /** Reads one SLO's status; the default GETs it through the controller's egress guard. */
  get?: (url: string, ctx: CheckContext) => Promise<unknown>;
}

const getJson = async (url: string, ctx: CheckContext): Promise<unknown> => {
  const res = await ctx.egress.fetch(url, {
    method: 'GET',
    headers: { accept: 'application/json' },
    timeoutMs: 5_000,
    maxBodyBytes: 16 * 1024,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  // Thrown, the round counts as no data (never as a pass); too few rounds with data are Inconclusive.
  if (res.status !== 200 || res.truncated) throw new Error(`the SLO service answered ${res.status} for ${url}`);
  return JSON.parse(res.body.toString('utf8'));
};

/**
 * The check's own settings. The VerificationCheck type (and the CRD schema) list the built-in
 * kinds only, so a plugin's field is read as the object has it (see PLUGINS.md, check providers).
 */
const settingsOf = (check: VerificationCheck) =>
  (check as unknown as { sloBudget?: Partial<SloBudgetSettings> }).sloBudget;

/**
 * Check kind `sloBudget`: the share of an SLO's error budget left, as an SLO service reports it
 * (`{ "budgetRemaining": 0.73 }`), must stay at or above `minRemaining` during the window. The
 * provider judges each measurement itself (`ok`); the controller counts them against the stage's
 * failure limit and minimum samples, like the built-in checks'. Settings the CRD cannot validate
 * are checked here: a broken check fails at once (`final`), naming what to fix.
 */
export function sloBudgetCheck(o: SloBudgetOptions): CheckProvider {
  const get = o.get ?? getJson;
  return {
    kind: 'sloBudget',
    async measure(check, ctx) {
      const s = settingsOf(check);
      if (typeof s?.slo !== 'string' || !s.slo || typeof s.minRemaining !== 'number')
        return { ok: false, final: true, message: `check ${check.name}: sloBudget needs slo and minRemaining` };
      const slo = s.slo
        .replaceAll('{application}', ctx.vars.application)
        .replaceAll('{environment}', ctx.vars.environment);
      const url = `${o.baseUrl.replace(/\/+$/, '')}/slos/${encodeURIComponent(slo)}`;
      const remaining = ((await get(url, ctx)) as { budgetRemaining?: unknown } | undefined)?.budgetRemaining;
      if (typeof remaining !== 'number' || !Number.isFinite(remaining))
        return { query: url, message: `SLO ${slo} reports no error budget yet` };
      const ok = remaining >= s.minRemaining;
      return {
        query: url,
        value: remaining,
        ok,
        ...(ok ? {} : { message: `${remaining} of the error budget of SLO ${slo} left, below ${s.minRemaining}` }),
      };
    },
  };
}
