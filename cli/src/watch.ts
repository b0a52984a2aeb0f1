import { isTerminalPlan, type PromotionPlan } from '@kpromo/api';
import { planProgress } from '@kpromo/contract';
import { getPlan } from '@kpromo/controller/api';
import type { LocalApi } from '@kpromo/controller/session';
import { stringify } from 'yaml';
import { CliFailure, EXIT } from './exitCodes.js';
import type { OutputFormat } from './output.js';
import { changeLines, planFrame, planSucceeded } from './progress.js';
import { fit } from './table.js';

export interface Terminal {
  write(s: string): void;
  /** A terminal: redraw in place; otherwise one line per change. */
  tty: boolean;
  columns?: number;
}

/** Re-read at least this often: the informer event is only a cue, and may be missed on a relist. */
const POLL_MS = 2_000;

/**
 * A display of one plan that follows it: redrawn in place on a terminal, one line per change
 * otherwise, one JSON (or YAML) document per change with -o json|yaml.
 */
export function planDisplay(out: Terminal, format: OutputFormat): (plan: PromotionPlan) => void {
  let drawn = 0;
  let last = '';
  let prev: PromotionPlan | undefined;
  return (plan: PromotionPlan) => {
    const now = new Date();
    if (format !== 'table') {
      const p = planProgress(plan);
      const text = format === 'json' ? `${JSON.stringify(p)}\n` : `---\n${stringify(p)}`;
      if (text !== last) out.write(text);
      last = text;
    } else if (out.tty) {
      const lines = planFrame(plan, now).map((l) => fit(l, out.columns));
      const text = `${lines.join('\n')}\n`;
      // Up to the first line of the last frame, then clear to the end of the screen.
      if (text !== last) out.write(`${drawn ? `\x1b[${drawn}A\r\x1b[J` : ''}${text}`);
      last = text;
      drawn = lines.length;
    } else {
      for (const l of changeLines(prev, plan, now)) out.write(`${l}\n`);
    }
    prev = plan;
  };
}

/**
 * Follows a plan until it is terminal, reading it through the API (authorised as the caller on
 * every read) whenever the informer sees it change, and every few seconds regardless. Ends with the
 * plan when it succeeded; throws a CliFailure (exit 6) when it finished otherwise, or (exit 1) after
 * `timeoutMs` while it still runs.
 */
export async function followPlan(
  s: LocalApi,
  ns: string,
  name: string,
  out: Terminal,
  opts: { format: OutputFormat; timeoutMs?: number },
): Promise<PromotionPlan> {
  const show = planDisplay(out, opts.format);
  const deadline = opts.timeoutMs ? Date.now() + opts.timeoutMs : Number.POSITIVE_INFINITY;
  let wake: (() => void) | undefined;
  s.onPlanUpdate(ns, name, () => wake?.());
  for (;;) {
    const plan = await getPlan(s.api, s.caller, ns, name);
    show(plan);
    if (isTerminalPlan(plan)) {
      if (planSucceeded(plan)) return plan;
      const p = planProgress(plan);
      throw new CliFailure(
        EXIT.PLAN_FAILED,
        `plan ${ns}/${name} finished ${p.phase}: ${p.succeeded} succeeded, ${p.failed} failed`,
      );
    }
    const left = deadline - Date.now();
    if (left <= 0)
      throw new CliFailure(
        EXIT.FAILURE,
        `plan ${ns}/${name} is still ${plan.status?.phase ?? 'Pending'} after the --timeout; it goes on (watch it again with plan watch ${name})`,
      );
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, Math.min(POLL_MS, left));
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
    wake = undefined;
  }
}
