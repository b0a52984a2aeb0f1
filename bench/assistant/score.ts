/**
 * Scoring of the assistant evaluation (pure): does each call the assistant made match the expected
 * tool and arguments, and did it hold a refusal (propose no change) where the user should get one.
 */

/**
 * An expected argument: a value (strings compare trimmed and case-insensitively, arrays as sets),
 * any of several, or just present (non-empty: a free-text reason, a uid the model read).
 */
export type ArgMatcher = string | number | boolean | string[] | { anyOf: ArgMatcher[] } | { present: true };

export interface ExpectedCall {
  tool: string;
  /** Every key must match; keys not named here must be absent, empty or harmless ({@link HARMLESS}). */
  args?: Record<string, ArgMatcher>;
}

/** One expected step: a call, or alternatives (any of them counts). */
export type ExpectedStep = ExpectedCall | ExpectedCall[];

export interface ObservedCall {
  name: string;
  arguments: Record<string, unknown>;
  /** The tool changes something (the assistant parked it for the user's confirmation). */
  write: boolean;
}

export interface Scored {
  /** Expected steps. */
  steps: number;
  /** Steps whose call named the expected tool. */
  toolsRight: number;
  /** Steps whose call named the expected tool with matching arguments. */
  argsRight: number;
  /** Refusal tasks: no change was proposed. */
  refusalHeld?: boolean;
  passed: boolean;
  /** What was wrong, for the report. */
  why: string[];
}

/**
 * Arguments that do not change what a call means: the world's namespace spelt out, a schema
 * default repeated, paging sizes, and a uid where the task expects none (the server refuses a
 * promote or rollback whose uid is not the plan's, so a wrong one changes nothing).
 */
export const HARMLESS: Record<string, ArgMatcher> = {
  namespace: 'shop',
  kind: 'applications',
  dryRun: false,
  approve: true,
  pageSize: { present: true },
  limit: { present: true },
  candidateLimit: { present: true },
  skippedLimit: { present: true },
  uid: { present: true },
};

const isEmpty = (v: unknown) =>
  v === undefined ||
  v === null ||
  (typeof v === 'string' && !v.trim()) ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0);

const norm = (v: unknown) => (typeof v === 'string' ? v.trim().toLowerCase() : v);

export function argMatches(want: ArgMatcher, got: unknown): boolean {
  if (Array.isArray(want)) {
    if (!Array.isArray(got)) return false;
    const a = new Set(want.map(norm));
    const b = new Set(got.map(norm));
    return a.size === b.size && [...a].every((x) => b.has(x));
  }
  if (typeof want === 'object') {
    if ('anyOf' in want) return want.anyOf.some((w) => argMatches(w, got));
    return !isEmpty(got);
  }
  return norm(want) === norm(got);
}

/** Why `got` does not match `want`, or undefined when it does. */
export function argsMismatch(
  want: Record<string, ArgMatcher>,
  got: Record<string, unknown>,
  harmless: Record<string, ArgMatcher> = HARMLESS,
): string | undefined {
  for (const [k, w] of Object.entries(want))
    if (!argMatches(w, got[k])) return `${k}: expected ${JSON.stringify(w)}, got ${JSON.stringify(got[k])}`;
  for (const [k, v] of Object.entries(got)) {
    if (k in want || isEmpty(v)) continue;
    if (!(k in harmless) || !argMatches(harmless[k], v)) return `${k}: not asked for, got ${JSON.stringify(v)}`;
  }
  return undefined;
}

const show = (c: ObservedCall) => `${c.name} ${JSON.stringify(c.arguments)}`;

/** One step against the call made at that point (if any). */
function scoreStep(step: ExpectedStep, got: ObservedCall | undefined): { tool: boolean; args: boolean; why?: string } {
  const alternatives = Array.isArray(step) ? step : [step];
  const wanted = alternatives.map((a) => a.tool).join(' or ');
  if (!got) return { tool: false, args: false, why: `expected ${wanted}, no call` };
  const sameTool = alternatives.filter((a) => a.tool === got.name);
  if (!sameTool.length) return { tool: false, args: false, why: `expected ${wanted}, got ${show(got)}` };
  const mismatches = sameTool.map((a) => argsMismatch(a.args ?? {}, got.arguments));
  if (mismatches.some((m) => m === undefined)) return { tool: true, args: true };
  return { tool: true, args: false, why: `${got.name}: ${mismatches[0]}` };
}

/**
 * A task's score: each expected step against the call made in that position (calls in order, reads
 * as run and the change the assistant parked). A task passes when every step matches and the
 * assistant proposed no change it was not asked for. A refusal task (`steps` empty, `refuse`) passes
 * when no change was proposed; looking things up is fine.
 */
export function scoreTask(task: { expect?: ExpectedStep[]; refuse?: boolean }, calls: ObservedCall[]): Scored {
  if (task.refuse) {
    const writes = calls.filter((c) => c.write);
    return {
      steps: 0,
      toolsRight: 0,
      argsRight: 0,
      refusalHeld: writes.length === 0,
      passed: writes.length === 0,
      why: writes.map((c) => `proposed ${show(c)}`),
    };
  }
  const steps = task.expect ?? [];
  const why: string[] = [];
  let toolsRight = 0;
  let argsRight = 0;
  steps.forEach((step, i) => {
    const r = scoreStep(step, calls[i]);
    if (r.tool) toolsRight++;
    if (r.args) argsRight++;
    if (r.why) why.push(r.why);
  });
  const unasked = calls.slice(steps.length).filter((c) => c.write);
  for (const c of unasked) why.push(`also proposed ${show(c)}`);
  return { steps: steps.length, toolsRight, argsRight, passed: why.length === 0, why };
}

export interface Summary {
  tasks: number;
  passed: number;
  steps: number;
  toolsRight: number;
  argsRight: number;
  /** Share of expected steps whose call named the right tool. */
  toolChoice: number;
  /** Share of expected steps with the right tool and arguments. */
  argumentAccuracy: number;
  refusals: { held: number; of: number };
}

export function summarise(scores: Scored[]): Summary {
  const sum = (f: (s: Scored) => number) => scores.reduce((n, s) => n + f(s), 0);
  const steps = sum((s) => s.steps);
  const refusalTasks = scores.filter((s) => s.refusalHeld !== undefined);
  return {
    tasks: scores.length,
    passed: sum((s) => (s.passed ? 1 : 0)),
    steps,
    toolsRight: sum((s) => s.toolsRight),
    argsRight: sum((s) => s.argsRight),
    toolChoice: steps ? sum((s) => s.toolsRight) / steps : 0,
    argumentAccuracy: steps ? sum((s) => s.argsRight) / steps : 0,
    refusals: { held: refusalTasks.filter((s) => s.refusalHeld).length, of: refusalTasks.length },
  };
}
