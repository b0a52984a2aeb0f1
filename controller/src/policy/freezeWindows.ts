import { createRequire } from 'node:module';
import vm from 'node:vm';
import type { FreezeWindow } from '@kpromo/api';
import { type CronExpression, CronExpressionParser } from 'cron-parser';
import { IANAZone } from 'luxon';
import type * as RRuleLib from 'rrule';
import { parseDuration } from './duration.js';

// rrule's package "main" is a webpack UMD bundle: Node's ESM loader (and tsx) find no named exports
// in it, so `import { RRule } from 'rrule'` fails at runtime. require() gets the real object.
const { RRule } = createRequire(import.meta.url)('rrule') as typeof RRuleLib;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** How far ahead `until` is looked for; a freeze (or an allow gap) longer than this reports no `until`. */
export const FREEZE_LOOKAHEAD_MS = 366 * DAY;
/** Bound on following back-to-back deny windows (e.g. an every-minute schedule with a 1h duration). */
const MAX_CHAIN_STEPS = 10_000;
/**
 * Evaluating windows runs on the controller's event loop: pathological rules (back-to-back minutely
 * windows, RRULEs that never occur and make rrule search towards year 9999) must not stall it and
 * lose it the lease. Past this budget the verdict fails closed with a message saying why.
 * It counts this thread's CPU time, not wall time: a controller starved of CPU by its neighbours
 * must not fail an ordinary window closed (a freeze nobody configured), only a rule that is itself
 * too expensive.
 */
export const FREEZE_EVAL_BUDGET_MS = 250;
let budgetDeadline = Number.POSITIVE_INFINITY;

/** This thread's CPU time (user + system) in milliseconds. */
export const threadCpuMs = (): number => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
};

function checkBudget(): void {
  if (threadCpuMs() > budgetDeadline) throw new Error(tooExpensive(FREEZE_EVAL_BUDGET_MS));
}

/** A freeze window and where it was configured, e.g. `Environment prod` or `stage prod of flow shop`. */
export interface SourcedWindow {
  window: FreezeWindow;
  source: string;
}

export interface FreezeVerdict {
  frozen: boolean;
  /** The window that freezes, or `outside allow windows`. */
  window?: string;
  source?: string;
  reason?: string;
  /** When promotions may run again as far as these windows tell; absent when beyond the look-ahead. */
  until?: Date;
  /** Set when a window cannot be evaluated: the freeze then holds (fail closed) and this says why. */
  invalid?: string;
}

/**
 * Whether promotions into a target are frozen at `now`.
 * - An open `deny` window freezes; `until` is when no deny window is open any more, following
 *   overlapping and back-to-back windows.
 * - When `allow` windows exist and none is open, it is frozen until the next one opens.
 * - Deny wins over allow. A window that cannot be evaluated (bad cron, RRULE, time zone, date)
 *   freezes with `invalid` set: a typo must not silently lift a freeze.
 */
export function evaluateFreeze(windows: readonly SourcedWindow[], now: Date): FreezeVerdict {
  budgetDeadline = threadCpuMs() + FREEZE_EVAL_BUDGET_MS;
  try {
    return withinHardLimit(() => evaluate(windows, now));
  } catch (e) {
    if (!isTimeout(e)) throw e;
    const problems = windows.map((sw) => windowError(sw, new Error(tooExpensive(FREEZE_HARD_LIMIT_MS))));
    return invalidVerdict(problems);
  } finally {
    budgetDeadline = Number.POSITIVE_INFINITY;
  }
}

/**
 * The budget above is checked between library calls, but one rrule call cannot be interrupted: it
 * walks FREQ periods until it finds a candidate (UNTIL is only compared with candidates), so a rule
 * that never occurs is walked to year 9999. A vm timeout stops any synchronous JavaScript, library
 * code included (V8's TerminateExecution), and is the hard bound. V8 measures it in wall time; it
 * is four times the CPU budget, so only a CPU-starved evaluation of a costly rule reaches it.
 */
export const FREEZE_HARD_LIMIT_MS = 1_000;
const watchdogContext = vm.createContext({ run: () => undefined });
const watchdogScript = new vm.Script('run()');

function withinHardLimit<T>(f: () => T): T {
  let out: { value: T } | undefined;
  watchdogContext.run = () => {
    out = { value: f() };
  };
  try {
    watchdogScript.runInContext(watchdogContext, { timeout: FREEZE_HARD_LIMIT_MS });
  } finally {
    watchdogContext.run = () => undefined;
  }
  if (!out) throw new Error('freeze evaluation returned nothing');
  return out.value;
}

const isTimeout = (e: unknown) => (e as { code?: string } | null)?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
const tooExpensive = (ms: number) =>
  `too expensive to evaluate (over ${ms} ms): use sparser recurrences, or a one-off start/end window`;

function evaluate(windows: readonly SourcedWindow[], now: Date): FreezeVerdict {
  const compiled: Compiled[] = [];
  const problems: WindowError[] = [];
  for (const sw of windows) {
    try {
      compiled.push(guarded(sw, compile(sw)));
    } catch (e) {
      problems.push(windowError(sw, e));
    }
  }
  if (problems.length) return invalidVerdict(problems);
  try {
    return decide(compiled, now.getTime());
  } catch (e) {
    // Some expressions only fail while iterating (e.g. cron-parser's loop limit).
    if (e instanceof WindowError) return invalidVerdict([e]);
    throw e;
  }
}

/**
 * Start times of a window in [from, to], ascending, at most `limit` of them. Throws with the reason
 * when the window is invalid. For schedules shown to users and for tests against published examples.
 */
export function windowStarts(window: FreezeWindow, from: Date, to: Date, limit = 1000): Date[] {
  const c = compile({ window, source: 'query' });
  try {
    return withinHardLimit(() => c.starts(from.getTime(), to.getTime(), limit)).map((t) => new Date(t));
  } catch (e) {
    throw isTimeout(e) ? new Error(tooExpensive(FREEZE_HARD_LIMIT_MS)) : e;
  }
}

interface Interval {
  start: number;
  end: number;
}

/** A window as functions of time (epoch milliseconds). */
interface Compiled {
  name: string;
  kind: 'deny' | 'allow';
  source: string;
  reason?: string;
  /** The occurrence open at t (start <= t < end), if any. */
  openAt(t: number): Interval | undefined;
  /** The first opening in (after, limit]. */
  nextOpening(after: number, limit: number): number | undefined;
  starts(from: number, to: number, limit: number): number[];
}

class WindowError extends Error {
  constructor(
    readonly window: string,
    readonly source: string,
    detail: string,
  ) {
    super(`freeze window "${window}" (${source}): ${detail}`);
    this.name = 'WindowError';
  }
}

function windowError(sw: SourcedWindow, e: unknown): WindowError {
  if (e instanceof WindowError) return e;
  return new WindowError(sw.window?.name ?? '(unnamed)', sw.source, e instanceof Error ? e.message : String(e));
}

function guarded(sw: SourcedWindow, c: Compiled): Compiled {
  const wrap =
    <A extends unknown[], R>(f: (...a: A) => R) =>
    (...a: A): R => {
      try {
        return f(...a);
      } catch (e) {
        throw windowError(sw, e);
      }
    };
  return { ...c, openAt: wrap(c.openAt), nextOpening: wrap(c.nextOpening), starts: wrap(c.starts) };
}

function invalidVerdict(problems: readonly WindowError[]): FreezeVerdict {
  return {
    frozen: true,
    window: problems[0].window,
    source: problems[0].source,
    reason: 'a freeze window is invalid; promotions wait until it is fixed',
    invalid: problems.map((p) => p.message).join('; '),
  };
}

function decide(windows: readonly Compiled[], now: number): FreezeVerdict {
  const deny = windows.filter((w) => w.kind === 'deny');
  const blocking = deny.find((w) => w.openAt(now));
  if (blocking) {
    const until = denyOver(deny, now);
    return {
      frozen: true,
      window: blocking.name,
      source: blocking.source,
      ...(blocking.reason ? { reason: blocking.reason } : {}),
      ...(until !== undefined ? { until: new Date(until) } : {}),
    };
  }
  const allow = windows.filter((w) => w.kind === 'allow');
  if (!allow.length || allow.some((w) => w.openAt(now))) return { frozen: false };
  let next: number | undefined;
  for (const w of allow) {
    const t = w.nextOpening(now, next ?? now + FREEZE_LOOKAHEAD_MS);
    if (t !== undefined && (next === undefined || t < next)) next = t;
  }
  return {
    frozen: true,
    window: 'outside allow windows',
    source: [...new Set(allow.map((w) => w.source))].join(', '),
    reason: `promotions run only inside allow windows: ${allow.map((w) => w.name).join(', ')}`,
    ...(next !== undefined ? { until: new Date(next) } : {}),
  };
}

/** When no deny window is open any more, following windows that overlap or start as another ends. */
function denyOver(deny: readonly Compiled[], now: number): number | undefined {
  const horizon = now + FREEZE_LOOKAHEAD_MS;
  let t = now;
  for (let step = 0; step < MAX_CHAIN_STEPS; step++) {
    try {
      checkBudget();
    } catch (e) {
      throw windowError({ window: { name: deny[0].name } as FreezeWindow, source: deny[0].source }, e);
    }
    let end: number | undefined;
    for (const w of deny) {
      const open = w.openAt(t);
      if (open && (end === undefined || open.end > end)) end = open.end;
    }
    if (end === undefined) return t;
    if (end > horizon) return undefined;
    t = end;
  }
  return undefined;
}

function compile(sw: SourcedWindow): Compiled {
  const w = sw.window;
  const kind = w.kind ?? 'deny';
  if (kind !== 'deny' && kind !== 'allow') throw new Error(`kind must be deny or allow, not "${kind}"`);
  const base = { name: w.name, kind, source: sw.source, ...(w.reason ? { reason: w.reason } : {}) } as const;
  const ways = [w.schedule, w.rrule, w.start].filter((v) => v !== undefined).length;
  if (ways !== 1) throw new Error('set exactly one of schedule, rrule or start/end');

  if (w.start !== undefined) {
    const start = rfc3339(w.start, 'start');
    if (w.end === undefined) throw new Error('end is required with start');
    const end = rfc3339(w.end, 'end');
    if (end <= start) throw new Error(`end ${w.end} must be after start ${w.start}`);
    return {
      ...base,
      openAt: (t) => (start <= t && t < end ? { start, end } : undefined),
      nextOpening: (after, limit) => (start > after && start <= limit ? start : undefined),
      starts: (from, to) => (start >= from && start <= to ? [start] : []),
    };
  }

  if (w.duration === undefined) throw new Error('duration is required with schedule or rrule');
  const duration = parseDuration(w.duration);
  if (duration <= 0) throw new Error(`duration ${w.duration} must be longer than 0s`);
  const tz = w.timeZone ?? 'UTC';
  if (!IANAZone.isValidZone(tz)) throw new Error(`unknown time zone "${tz}"; use an IANA name such as Europe/Berlin`);
  const starts =
    w.schedule !== undefined ? cronStarts(w.schedule, tz) : rruleStarts(w.rrule ?? '', IANAZone.create(tz));
  return {
    ...base,
    openAt(t) {
      // The latest start within one duration before t: later starts of overlapping occurrences end later.
      const s = starts.latest(t - duration, t);
      return s === undefined ? undefined : { start: s, end: s + duration };
    },
    nextOpening: (after, limit) => starts.first(after, limit),
    starts: (from, to, limit) => starts.list(from, to, limit),
  };
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function rfc3339(value: string, field: string): number {
  // Date.parse alone would read "2026-01-01T10:00" (no offset) in the controller's own time zone.
  const t = RFC3339.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(t)) throw new Error(`${field} "${value}" is not an RFC 3339 date-time with offset`);
  return t;
}

/** Start instants of a recurring window. Bounds are epoch ms; `after` is exclusive, the other bound inclusive. */
interface Starts {
  latest(after: number, atOrBefore: number): number | undefined;
  first(after: number, limit: number): number | undefined;
  list(from: number, to: number, limit: number): number[];
}

function cronStarts(schedule: string, tz: string): Starts {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== 5 || fields[0] === '') {
    throw new Error(
      `cron schedule "${schedule}" must have 5 fields: minute hour day-of-month month day-of-week, e.g. "0 16 * * 5"`,
    );
  }
  let expr: CronExpression;
  try {
    expr = CronExpressionParser.parse(fields.join(' '), { tz });
  } catch (e) {
    throw new Error(`invalid cron schedule "${schedule}": ${e instanceof Error ? e.message : String(e)}`);
  }
  // cron-parser's next() and prev() exclude the current date itself.
  return {
    latest(after, atOrBefore) {
      expr.reset(new Date(atOrBefore + 1));
      const s = expr.prev().getTime();
      return s > after ? s : undefined;
    },
    first(after, limit) {
      expr.reset(new Date(after));
      const s = expr.next().getTime();
      return s <= limit ? s : undefined;
    },
    list(from, to, limit) {
      const out: number[] = [];
      expr.reset(new Date(from - 1));
      while (out.length < limit) {
        checkBudget();
        const s = expr.next().getTime();
        if (s > to) break;
        out.push(s);
      }
      return out;
    },
  };
}

const instantToWall = (t: number, zone: IANAZone) => t + zone.offset(t) * MINUTE;

/**
 * The instant a wall-clock time (local fields as epoch ms read as UTC) names in `zone`, as RFC 5545
 * 3.3.5 has it: in a repeated hour the first occurrence; in a skipped hour the offset before the gap
 * (02:30 on a spring-forward day means 03:30 new time). luxon alone would pick the later occurrence.
 */
function wallToInstant(wall: number, zone: IANAZone): number {
  const offsets = new Set([zone.offset(wall - DAY), zone.offset(wall), zone.offset(wall + DAY)]);
  const fits = [...offsets].map((o) => wall - o * MINUTE).filter((t) => instantToWall(t, zone) === wall);
  return fits.length ? Math.min(...fits) : wall - zone.offset(wall - DAY) * MINUTE;
}

/** Without a DTSTART line a rule counts from local midnight, 1970-01-01 (INTERVAL, default BYHOUR etc.). */
const DEFAULT_DTSTART = 0;

interface ParsedRule {
  options: Partial<RRuleLib.Options>;
  dtstart: number;
  /** Length of one FREQ*INTERVAL period when it is fixed in wall-clock time and the rule has no COUNT. */
  period?: number;
  /**
   * For MONTHLY/YEARLY rules without COUNT: whole years after which the rule repeats exactly
   * (lcm(INTERVAL, 12) months), so a search can start near the asked time instead of at DTSTART.
   */
  stepYears?: number;
}

/**
 * Start instants of an RRULE. rrule's own TZID handling reads the process time zone, so occurrences
 * are computed in floating wall-clock time and placed in the zone here.
 */
function rruleStarts(text: string, zone: IANAZone): Starts {
  const rule = parseRule(text, zone);
  const between = (from: number, to: number): number[] => {
    checkBudget();
    // Pad by a day: a local time maps to an instant up to ~a day away (offsets, Samoa-style date-line jumps).
    const lo = instantToWall(from, zone) - DAY;
    const hi = instantToWall(to, zone) + DAY;
    let dtstart = rule.dtstart;
    // rrule iterates from DTSTART; skipping whole periods keeps the occurrences and bounds the work.
    if (rule.period && lo - dtstart > rule.period) dtstart += Math.floor((lo - dtstart) / rule.period) * rule.period;
    if (rule.stepYears) {
      // Same month, day and time, whole repeat cycles later: the occurrences are unchanged, and rrule
      // no longer walks every month since 1970 (or towards 9999 for a rule that never occurs).
      const d = new Date(dtstart);
      const years =
        Math.floor((new Date(lo).getUTCFullYear() - 1 - d.getUTCFullYear()) / rule.stepYears) * rule.stepYears;
      if (years > 0) d.setUTCFullYear(d.getUTCFullYear() + years);
      dtstart = d.getTime();
    }
    // UNTIL bounds rrule's own iteration: without it a rule that never occurs is walked to year 9999.
    const until = rule.options.until && rule.options.until.getTime() < hi ? rule.options.until : new Date(hi);
    const r = new RRule({ ...rule.options, dtstart: new Date(dtstart), until });
    return r
      .between(new Date(lo), new Date(hi), true)
      .map((d) => wallToInstant(d.getTime(), zone))
      .filter((s) => s >= from && s <= to)
      .sort((a, b) => a - b);
  };
  const MAX_SPAN = 366 * DAY;
  return {
    latest(after, atOrBefore) {
      // Search backwards in growing spans: dense rules answer from the first hour, sparse ones still finish.
      let hi = atOrBefore;
      for (let span = HOUR; hi > after; span = Math.min(span * 8, MAX_SPAN)) {
        const lo = Math.max(after, hi - span);
        const found = between(lo, hi).filter((s) => s > lo);
        if (found.length) return found[found.length - 1];
        hi = lo;
      }
      return undefined;
    },
    first(after, limit) {
      let lo = after;
      for (let span = HOUR; lo < limit; span = Math.min(span * 8, MAX_SPAN)) {
        const hi = Math.min(limit, lo + span);
        const found = between(lo, hi).filter((s) => s > lo);
        if (found.length) return found[0];
        lo = hi;
      }
      return undefined;
    },
    list: (from, to, limit) => between(from, to).slice(0, limit),
  };
}

const WEEKDAY = /^[+-]?\d{0,2}(MO|TU|WE|TH|FR|SA|SU)$/;
const NUMERIC_RANGES: ReadonlyArray<[keyof RRuleLib.Options, string, number, number, boolean]> = [
  ['bymonth', 'BYMONTH', 1, 12, false],
  ['bymonthday', 'BYMONTHDAY', 1, 31, true],
  ['byyearday', 'BYYEARDAY', 1, 366, true],
  ['byweekno', 'BYWEEKNO', 1, 53, true],
  ['byhour', 'BYHOUR', 0, 23, false],
  ['byminute', 'BYMINUTE', 0, 59, false],
  ['bysecond', 'BYSECOND', 0, 59, false],
  ['bysetpos', 'BYSETPOS', 1, 366, true],
];

/**
 * Accepts the RRULE body ("FREQ=WEEKLY;BYDAY=FR;BYHOUR=16;BYMINUTE=0"), optionally prefixed
 * "RRULE:", and optionally preceded by a line "DTSTART:20260102T160000" in local time of the window's
 * time zone. UNTIL may be local or UTC (…Z).
 */
function parseRule(text: string, zone: IANAZone): ParsedRule {
  let body: string | undefined;
  let dtstart: number | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line) continue;
    if (/^DTSTART/i.test(line)) {
      const m = /^DTSTART:(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})$/i.exec(line);
      const t = m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) : Number.NaN;
      if (!m || new Date(t).toISOString().replace(/\D/g, '').slice(0, 14) !== m.slice(1).join('')) {
        throw new Error(
          `invalid rrule: "${line}" must be a local date-time like DTSTART:20260102T160000 (the time zone is timeZone)`,
        );
      }
      dtstart = t;
    } else {
      if (body !== undefined) throw new Error('invalid rrule: give one RRULE (and optionally one DTSTART line)');
      body = line.replace(/^RRULE:/i, '');
      if (body.includes(':')) throw new Error(`invalid rrule: unsupported line "${line}"; only DTSTART and RRULE`);
    }
  }
  if (!body) throw new Error('invalid rrule: it is empty');
  const bad = (what: string) => new Error(`invalid rrule "${body}": ${what}`);

  for (const part of body.split(';')) {
    const [key, value = ''] = part.split('=');
    if (/^(BYDAY|WKST)$/i.test(key)) {
      const badDay = value.split(',').find((d) => !WEEKDAY.test(d.toUpperCase()));
      if (badDay !== undefined) throw bad(`${key.toUpperCase()} value "${badDay}" is not a weekday such as MO or 1FR`);
    }
    if (/^(DTSTART|TZID)$/i.test(key)) throw bad(`${key.toUpperCase()} is not an RRULE part; use timeZone`);
  }
  let options: Partial<RRuleLib.Options>;
  try {
    options = RRule.parseString(body);
  } catch (e) {
    throw bad(e instanceof Error ? e.message : String(e));
  }
  if (options.freq === undefined || RRule.FREQUENCIES[options.freq] === undefined) {
    throw bad('FREQ is required (YEARLY, MONTHLY, WEEKLY, DAILY, HOURLY or MINUTELY)');
  }
  if (options.freq === RRule.SECONDLY) throw bad('FREQ=SECONDLY is not supported; the finest is MINUTELY');
  // RFC 5545 3.3.10 rule parts that MUST NOT be combined; rrule would accept them and then search
  // for occurrences that never come.
  const freqName = RRule.FREQUENCIES[options.freq];
  const byday = [options.byweekday ?? []].flat();
  if (
    options.freq !== RRule.MONTHLY &&
    options.freq !== RRule.YEARLY &&
    byday.some((d) => typeof d === 'object' && d !== null && 'n' in d && d.n)
  )
    throw bad(`BYDAY with a number (like 1MO) needs FREQ=MONTHLY or YEARLY, not ${freqName}`);
  if (options.byweekno != null && options.freq !== RRule.YEARLY)
    throw bad(`BYWEEKNO needs FREQ=YEARLY, not ${freqName}`);
  if (
    options.byyearday != null &&
    (options.freq === RRule.DAILY || options.freq === RRule.WEEKLY || options.freq === RRule.MONTHLY)
  )
    throw bad(`BYYEARDAY cannot be used with FREQ=${freqName}`);
  if (options.bymonthday != null && options.freq === RRule.WEEKLY)
    throw bad('BYMONTHDAY cannot be used with FREQ=WEEKLY');
  for (const [key, part, min, max, signed] of NUMERIC_RANGES) {
    const v = options[key];
    if (v === undefined || v === null) continue;
    for (const n of [v].flat()) {
      if (typeof n !== 'number' || !Number.isInteger(n) || Math.abs(n) < min || Math.abs(n) > max || (!signed && n < 0))
        throw bad(`${part} value ${String(n)} is out of range`);
    }
  }
  const interval = options.interval ?? 1;
  if (!Number.isInteger(interval) || interval < 1) throw bad('INTERVAL must be a positive integer');
  if (options.count !== undefined && options.count !== null) {
    if (!Number.isInteger(options.count) || options.count < 1) throw bad('COUNT must be a positive integer');
    if (dtstart === undefined) throw bad('COUNT needs a DTSTART line to count from; use UNTIL instead');
  }
  // rrule reads every UNTIL as floating; a UTC one (…Z) is an instant, so move it to wall-clock time.
  if (options.until && /UNTIL=\d{8}T\d{6}Z/i.test(body)) {
    options.until = new Date(instantToWall(options.until.getTime(), zone));
  }
  const fixed: Partial<Record<number, number>> = {
    [RRule.WEEKLY]: 7 * DAY,
    [RRule.DAILY]: DAY,
    [RRule.HOURLY]: HOUR,
    [RRule.MINUTELY]: MINUTE,
  };
  const unit = fixed[options.freq];
  const hasCount = options.count !== undefined && options.count !== null;
  const start = dtstart ?? DEFAULT_DTSTART;
  const gcd = (a: number, b: number): number => (b ? gcd(b, a % b) : a);
  const leapDay = new Date(start).getUTCMonth() === 1 && new Date(start).getUTCDate() === 29;
  const stepYears =
    hasCount || leapDay
      ? undefined
      : options.freq === RRule.MONTHLY
        ? (interval * 12) / gcd(interval, 12) / 12
        : options.freq === RRule.YEARLY
          ? interval
          : undefined;
  return {
    options,
    dtstart: start,
    ...(unit && !hasCount ? { period: unit * interval } : {}),
    ...(stepYears ? { stepYears } : {}),
  };
}
