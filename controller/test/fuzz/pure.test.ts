// Property-based fuzzing of the pure functions that take user input (resource fields, API and MCP
// arguments): for arbitrary, size-bounded input they return or throw only their documented, clear
// error types; they finish (bounded sizes, linear-time matching; evaluateFreeze runs in a worker that
// gives up on a blocking call and reports its input); and they never change a built-in prototype.
// FUZZ_SCALE=10 multiplies the run counts for a deeper local hunt.
import type { Application, EnvironmentVersion, FreezeWindow } from '@kpromo/api';
import { compileTagPattern, globMatcher, PatternError } from '@kpromo/contract';
import { app, dg, flow } from '@kpromo/test-harness/objects';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/context.js';
import {
  type CandidateFilter,
  computeCandidates,
  InputError,
  matchesSelector,
} from '../../src/candidates/computeCandidates.js';
import { valuesPatch } from '../../src/delivery/helmRelease.js';
import {
  checkRepoFilePath,
  parseValuesPath,
  setImageInYaml,
  ValuesPathError,
  YamlEditError,
} from '../../src/delivery/yamlEdit.js';
import { parseDuration } from '../../src/policy/duration.js';
import { FREEZE_HARD_LIMIT_MS, type FreezeVerdict, type SourcedWindow } from '../../src/policy/freezeWindows.js';
import { renderTag } from '../../src/reconcile/tagTemplate.js';
import {
  ApproveBody,
  CreatePlanBody,
  DiffQuery,
  NamespaceQuery,
  PlanParams,
  parseInput,
  RollbackBody,
} from '../../src/server/schemas.js';
import { DeadlineWorker } from './deadline.js';

/** FUZZ_SCALE=20 for a deeper local hunt; the default keeps the suite to a few seconds. */
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const runs = (n: number) => ({ numRuns: Math.max(1, Math.round(n * SCALE)) });
const RUNS = runs(200);

// ---- prototype pollution: every built-in prototype keeps its exact own keys ----
const PROTOS: Array<[string, object]> = [
  ['Object', Object.prototype],
  ['Array', Array.prototype],
  ['Function', Function.prototype],
  ['String', String.prototype],
];
const keysOf = () => PROTOS.map(([n, p]) => `${n}:${Reflect.ownKeys(p).map(String).sort().join(',')}`);
let before: string[];
beforeEach(() => {
  before = keysOf();
});
afterEach(() => {
  expect(keysOf(), 'a built-in prototype gained or lost a property').toEqual(before);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
});

/** Runs f; an exception must be one of `types` (anything else, e.g. a TypeError, fails the property). */
function only<T>(types: Array<abstract new (...a: never[]) => Error>, f: () => T): T | Error {
  try {
    return f();
  } catch (e) {
    if (!types.some((t) => e instanceof t))
      throw new Error(`unexpected ${(e as Error)?.name}: ${(e as Error)?.message}`);
    expect((e as Error).message.length).toBeGreaterThan(0);
    return e as Error;
  }
}

// ---- arbitraries ----
const evilKey = fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf');
const shortText = fc.string({ maxLength: 24 });
const key = fc.oneof(evilKey, fc.constantFrom('image', 'tag', 'a-b', '_', 'x1'), shortText);
const dotPath = fc.oneof(
  fc.array(key, { minLength: 0, maxLength: 6 }).map((a) => a.join('.')),
  fc.string({ maxLength: 300 }),
);
const REGEX_CHARS = [...'()[]{}*+?|^$\\.-,:=!<>aAv019dDwWsSbBpPLuxk_ '];
const regexish = fc.oneof(
  fc.string({ unit: fc.constantFrom(...REGEX_CHARS), maxLength: 40 }),
  fc.string({ maxLength: 300 }),
  fc.constantFrom(
    '^(a+)+$',
    '(a|aa)+$',
    '(x+x+)+y',
    '^(a)\\1$',
    '(?=a)',
    '(?<!a)b',
    '[\\s\\S]{1000}[\\s\\S]{1000}[\\s\\S]{1000}[\\s\\S]{1000}[\\s\\S]{1000}[\\s\\S]{1000}',
    '(((a{100}){100}){100})',
    '\\p{Greek}+',
    '^v\\d+\\.\\d+\\.\\d+',
  ),
);
const tag = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(`${'a'.repeat(5000)}!`, 'v1.2.3', 'v10.0.0-rc.1+build', ''),
  fc.string({ unit: fc.constantFrom('a', 'x', '!', 'v', '.', '1'), maxLength: 300 }),
);
const stringList = fc.oneof(
  fc.array(fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('*', '*a*a*a*a*a*b', 'shop-*', '?')), {
    maxLength: 5,
  }),
  fc.constant(undefined),
);
/** Filters as an API body could carry them (shapes unchecked): strings, lists, objects, junk. */
const filter: fc.Arbitrary<CandidateFilter> = fc.record(
  {
    applications: fc.oneof(stringList, fc.anything({ maxDepth: 2 })),
    teams: fc.oneof(stringList, fc.anything({ maxDepth: 2 })),
    matchLabels: fc.oneof(
      fc.dictionary(key, fc.oneof(shortText, fc.anything({ maxDepth: 1 })), { maxKeys: 4 }),
      fc.anything({ maxDepth: 2 }),
    ),
    tagPattern: fc.oneof(regexish, fc.anything({ maxDepth: 1 })),
  },
  { requiredKeys: [] },
) as fc.Arbitrary<CandidateFilter>;

describe('computeCandidates and selectors', () => {
  const apps: Application[] = [
    app('cart', {}, { team: 'web' }),
    app('shop-api', { owner: 'team-b' }),
    app('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab'),
  ];

  it('returns candidates or throws an InputError naming the field, for any filter, flow pattern and tags', () => {
    fc.assert(
      fc.property(
        filter,
        fc.option(regexish, { nil: undefined }),
        tag,
        fc.constantFrom(['dev', 'stable'] as const, ['dev', 'prod'] as const, ['stable', 'dev'] as const),
        (f, flowPattern, t, [from, to]) => {
          const fl = flow(['dev', 'stable', 'prod'], flowPattern === undefined ? {} : { tagPattern: flowPattern });
          const versionOf = (_a: Application, e: string): EnvironmentVersion | undefined =>
            e === 'dev' ? { environment: e, tag: t, digest: dg('a'), health: 'Healthy' } : undefined;
          const r = only([InputError], () => computeCandidates(fl, apps, versionOf, from, to, f));
          if (r instanceof Error) {
            expect((r as InputError).field).toBeTruthy();
            expect(r.message).toMatch(
              /^(PromotionFlow main: )?(tagPattern|applications|teams|matchLabels)[.:]|stage transition/,
            );
          } else {
            expect(r.candidates.length + r.skipped.length).toBe(apps.length);
          }
        },
      ),
      RUNS,
    );
  });

  it('tag patterns compile to linear-time matchers or fail with "tagPattern: …"', () => {
    fc.assert(
      fc.property(regexish, tag, (p, t) => {
        const m = only([PatternError], () => compileTagPattern(p));
        if (m instanceof Error) expect(m.message).toMatch(/^tagPattern: /);
        else expect(typeof m.test(t)).toBe('boolean');
      }),
      RUNS,
    );
  });

  it('globs agree with a reference matcher and never throw for strings', () => {
    // Reference: dynamic programming over (glob, name) prefixes; obviously correct, quadratic.
    const reference = (g: string, s: string) => {
      let prev = new Array<boolean>(s.length + 1).fill(false);
      prev[0] = true;
      for (const c of g) {
        const cur = new Array<boolean>(s.length + 1).fill(false);
        if (c === '*') cur[0] = prev[0];
        for (let j = 1; j <= s.length; j++)
          cur[j] = c === '*' ? prev[j] || cur[j - 1] : prev[j - 1] && (c === '?' || c === s[j - 1]);
        prev = cur;
      }
      return prev[s.length];
    };
    const alpha = fc.constantFrom('a', 'b', '*', '?', '-');
    fc.assert(
      fc.property(
        fc.string({ unit: alpha, maxLength: 12 }),
        fc.string({ unit: fc.constantFrom('a', 'b', '-'), maxLength: 16 }),
        (g, s) => {
          expect(globMatcher(g).test(s)).toBe(reference([...g].join(''), s));
        },
      ),
      runs(300),
    );
    fc.assert(
      fc.property(fc.anything({ maxDepth: 1 }), fc.string({ maxLength: 600 }), (g, s) => {
        const m = only([PatternError], () => globMatcher(g));
        if (!(m instanceof Error)) expect(typeof m.test(s)).toBe('boolean');
      }),
      RUNS,
    );
  });

  it('matchesSelector answers a boolean or an InputError for any selector shape', () => {
    fc.assert(
      fc.property(filter, (sel) => {
        for (const a of apps) only([InputError], () => matchesSelector(a, sel));
      }),
      RUNS,
    );
  });
});

describe('value path editors', () => {
  const value = { image: 'reg.local/prod/app', tag: 'v1.2.0', digest: dg('a') };
  const yamlText = fc.oneof(
    fc.string({ maxLength: 200 }),
    fc
      .dictionary(key, fc.oneof(shortText, fc.dictionary(key, shortText, { maxKeys: 3 }), fc.array(shortText)), {
        maxKeys: 4,
      })
      .map((o) => JSON.stringify(o)), // JSON is YAML
    fc.constantFrom(
      'image: [1]\n',
      'a: &x {t: 1}\nb: *x\n',
      '__proto__:\n  polluted: 1\n',
      'constructor: {prototype: {}}\n',
      'scalar\n',
      '- a\n- b\n',
      '',
      '{',
      'a: !!binary aGVsbG8=\n',
      '%YAML 1.1\n---\na: <<\n',
    ),
  );

  it('setImageInYaml edits or throws ValuesPathError / YamlEditError', () => {
    fc.assert(
      fc.property(yamlText, dotPath, (text, path) => {
        const r = only([ValuesPathError, YamlEditError], () => setImageInYaml(text, path, value));
        if (!(r instanceof Error)) {
          expect(typeof r.text).toBe('string');
          // Editing is idempotent: the edited text already holds the value.
          expect(setImageInYaml(r.text, path, value).changed).toBe(false);
        }
        if (/(^|\.)(__proto__|constructor|prototype)(\.|$)/.test(path)) expect(r).toBeInstanceOf(ValuesPathError);
      }),
      RUNS,
    );
  });

  it('valuesPatch builds prototype-free values or throws ValuesPathError', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(dotPath, shortText), { maxLength: 4 }), (entries) => {
        const r = only([ValuesPathError], () => valuesPatch(entries));
        if (!(r instanceof Error)) {
          const walk = (o: unknown): void => {
            if (typeof o !== 'object' || o === null) return;
            expect(Object.getPrototypeOf(o)).toBeNull();
            for (const v of Object.values(o)) walk(v);
          };
          walk(r);
        }
      }),
      RUNS,
    );
  });

  it('parseValuesPath and checkRepoFilePath accept or name the field', () => {
    fc.assert(
      fc.property(fc.oneof(dotPath, fc.anything({ maxDepth: 1 })), (p) => {
        const r = only([ValuesPathError], () => parseValuesPath(p, 'delivery.git.valuesPath'));
        if (r instanceof Error) expect(r.message).toMatch(/^delivery\.git\.valuesPath[ :]/);
        else expect(r.join('.')).toBe(p);
      }),
      RUNS,
    );
    const seg = fc.oneof(fc.constantFrom('..', '.', '', '.git', '{app}', 'values.yaml', 'C:'), shortText);
    fc.assert(
      fc.property(
        fc.array(seg, { maxLength: 6 }).map((a) => a.join('/')),
        (p) => {
          const r = only([ValuesPathError], () => checkRepoFilePath(p));
          if (!(r instanceof Error)) {
            // Whatever is accepted stays below the checkout directory.
            const parts = p.split('/');
            expect(parts.every((s) => s !== '..' && s !== '.' && s !== '' && s.toLowerCase() !== '.git')).toBe(true);
            expect(p.startsWith('/')).toBe(false);
          }
        },
      ),
      RUNS,
    );
  });
});

describe('HTTP API input schemas', () => {
  const schemas = { NamespaceQuery, DiffQuery, CreatePlanBody, ApproveBody, RollbackBody, PlanParams };
  const input = fc.oneof(
    fc.anything({ maxDepth: 3, maxKeys: 6 }),
    fc.record(
      {
        namespace: fc.oneof(key, fc.anything({ maxDepth: 1 })),
        from: fc.oneof(fc.constant('dev'), key),
        to: fc.oneof(fc.constant('stable'), key),
        name: key,
        ns: key,
        applications: fc.oneof(shortText, fc.array(fc.anything({ maxDepth: 1 }), { maxLength: 3 })),
        matchLabels: fc.oneof(
          fc.dictionary(key, fc.anything({ maxDepth: 1 }), { maxKeys: 3 }),
          fc.anything({ maxDepth: 1 }),
        ),
        tagPattern: regexish,
        approve: fc.anything({ maxDepth: 0 }),
        comment: fc.oneof(shortText, fc.constant('c'.repeat(1100))),
      },
      { requiredKeys: [] },
    ),
  );

  it('parse or answer a 400 ApiError naming the field, for any value', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(schemas)),
        input,
        fc.constantFrom('query', 'request body', 'path'),
        (k, v, what) => {
          const r = only([ApiError], () => parseInput(schemas[k as keyof typeof schemas], v, what as 'query'));
          if (r instanceof ApiError) {
            expect(r.status).toBe(400);
            expect(r.message).toMatch(new RegExp(`^invalid ${what}: \\S`));
          }
        },
      ),
      RUNS,
    );
  });
});

describe('tag templates', () => {
  const template = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc
      .array(
        fc.oneof(
          fc.constantFrom('{tag}', '{version}', '{timestamp}', '{shortDigest}', '{', '}', '{x}', '-'),
          shortText,
        ),
        {
          maxLength: 6,
        },
      )
      .map((a) => a.join('')),
  );

  it('renders a valid OCI tag or throws naming the template', () => {
    fc.assert(
      fc.property(
        fc.option(template, { nil: undefined }),
        tag,
        fc.oneof(fc.string({ maxLength: 80 }), fc.constant(dg('b'))),
        fc.date({ noInvalidDate: true }),
        (tpl, t, digest, time) => {
          const r = only([Error], () => renderTag(tpl, { tag: t, digest, time }));
          if (r instanceof Error) expect(r.message).toMatch(/^tagTemplate "/);
          else expect(r).toMatch(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/);
        },
      ),
      RUNS,
    );
  });
});

describe('durations', () => {
  const unit = fc.constantFrom('h', 'm', 's');
  const valid = fc.array(fc.tuple(fc.integer({ min: 0, max: 999_999 }), unit), { minLength: 1, maxLength: 4 });

  it('parses valid durations exactly and refuses anything else with "invalid duration"', () => {
    fc.assert(
      fc.property(valid, (parts) => {
        const ms = { h: 3_600_000, m: 60_000, s: 1_000 } as const;
        const s = parts.map(([n, u]) => `${n}${u}`).join('');
        expect(parseDuration(s)).toBe(parts.reduce((a, [n, u]) => a + n * ms[u as keyof typeof ms], 0));
      }),
      RUNS,
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.string({ unit: fc.constantFrom('1', '0', 'h', 'm', 's', 'd', '.', '-', ' '), maxLength: 200 }),
          fc.anything({ maxDepth: 1 }),
        ),
        (s) => {
          const r = only([Error], () => parseDuration(s as string));
          if (r instanceof Error) expect(r.message).toMatch(/^invalid duration /);
          else expect(Number.isSafeInteger(r) && r >= 0).toBe(true);
        },
      ),
      RUNS,
    );
  });
});

describe('freeze windows', () => {
  /** Mostly plausible values (so evaluation goes deep), sometimes junk. */
  const mostly = <T>(good: fc.Arbitrary<T>, junk: fc.Arbitrary<T>) =>
    fc.oneof({ arbitrary: good, weight: 6 }, { arbitrary: junk, weight: 1 });
  const cronField = mostly(
    fc.constantFrom('*', '*/5', '*/15', '0', '30', '0-23', '9-17', '1,15', 'L', '*/0', '60', '-1', '?'),
    fc.string({ maxLength: 6 }),
  );
  const cron = mostly(
    fc
      .tuple(
        fc.constantFrom('0', '*/10', '30', '*', '0-59/7'),
        fc.constantFrom('*', '16', '0-23', '9-17', '*/6', '22'),
        fc.constantFrom('*', '1', '15', 'L', '29-31', '31'),
        fc.constantFrom('*', '2', '12', 'JAN', '1-6'),
        fc.constantFrom('*', '5', 'MON-FRI', '0', '1#2', '5L', '6,0'),
      )
      .map((a) => a.join(' ')),
    fc.oneof(
      fc.array(cronField, { minLength: 1, maxLength: 7 }).map((a) => a.join(' ')),
      fc.string({ maxLength: 40 }),
    ),
  );
  const rrulePart = mostly(
    fc.constantFrom(
      'BYDAY=FR',
      'BYDAY=1MO,-1SU',
      'BYDAY=MO,TU,WE,TH,FR',
      'BYHOUR=16',
      'BYHOUR=0,12',
      'BYMINUTE=0',
      'BYMINUTE=30',
      'BYMONTH=2',
      'BYMONTH=12',
      'BYMONTHDAY=30',
      'BYMONTHDAY=-1',
      'BYSETPOS=1',
      'BYSETPOS=-1',
      'BYYEARDAY=366',
      'BYWEEKNO=53',
      'INTERVAL=2',
      'INTERVAL=7',
      'COUNT=3',
      'UNTIL=20270101T000000Z',
      'UNTIL=20260601T120000',
      'WKST=MO',
    ),
    fc.oneof(
      fc.constantFrom('BYDAY=XX', 'BYHOUR=25', 'INTERVAL=0', 'UNTIL=garbage', 'TZID=Europe/Berlin', 'FREQ=SECONDLY'),
      fc.string({ maxLength: 12 }),
    ),
  );
  const rrule = mostly(
    fc
      .tuple(
        fc.option(fc.constantFrom('DTSTART:20260102T160000', 'DTSTART:19991231T235959', 'DTSTART:20261340T250000'), {
          nil: undefined,
        }),
        fc.constantFrom('', 'RRULE:'),
        mostly(
          fc.constantFrom('YEARLY', 'MONTHLY', 'WEEKLY', 'DAILY', 'HOURLY', 'MINUTELY'),
          fc.constantFrom('SECONDLY', 'NEVER', ''),
        ),
        fc.array(rrulePart, { maxLength: 4 }),
      )
      .map(([d, prefix, freq, parts]) => `${d ? `${d}\n` : ''}${prefix}${[`FREQ=${freq}`, ...parts].join(';')}`),
    fc.string({ maxLength: 60 }),
  );
  const tz = mostly(
    fc.constantFrom(
      'UTC',
      'Europe/Berlin',
      'America/New_York',
      'Pacific/Apia',
      'Australia/Lord_Howe',
      'Asia/Kathmandu',
    ),
    fc.oneof(fc.constantFrom('Mars/Olympus', ''), fc.string({ maxLength: 20 })),
  );
  const duration = mostly(
    fc.constantFrom('1m', '1h', '30m', '90s', '168h', '8784h', '999999h', '1h30m', '25h'),
    fc.oneof(fc.constantFrom('0s', '5d', '', '-1h'), fc.string({ maxLength: 10 })),
  );
  const date = mostly(
    fc
      .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2060-01-01T00:00:00Z'), noInvalidDate: true })
      .map((d) => d.toISOString()),
    fc.oneof(
      fc.constantFrom('2026-12-24T00:00:00+01:00', '2026-01-01T10:00', 'not a date', '2026-02-30T00:00:00Z'),
      fc.string({ maxLength: 30 }),
    ),
  );
  const base = {
    name: shortText,
    kind: mostly(fc.constantFrom('deny', 'allow'), shortText),
    reason: shortText,
  };
  // Mostly one way of saying when (as the schema has it), sometimes any combination.
  const window = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record(
        { ...base, schedule: cron, duration, timeZone: tz },
        { requiredKeys: ['name', 'schedule', 'duration'] },
      ),
    },
    {
      weight: 3,
      arbitrary: fc.record({ ...base, rrule, duration, timeZone: tz }, { requiredKeys: ['name', 'rrule', 'duration'] }),
    },
    {
      weight: 2,
      arbitrary: fc.record({ ...base, start: date, end: date }, { requiredKeys: ['name', 'start', 'end'] }),
    },
    {
      weight: 1,
      arbitrary: fc.record(
        { ...base, schedule: cron, rrule, start: date, end: date, duration, timeZone: tz },
        { requiredKeys: ['name'] },
      ),
    },
  ) as fc.Arbitrary<FreezeWindow>;

  /**
   * RRULEs that may never occur (BYMONTH with BYMONTHDAY, BYWEEKNO, BYYEARDAY, BYSETPOS) are left
   * out of the generator: each costs the full hard limit (1 s), which 300 runs cannot afford; the
   * dedicated test below covers them (FUZZ_KNOWN_SLOW=1 puts them back).
   */
  const maybeNeverOccurs = (w: FreezeWindow) =>
    typeof w.rrule === 'string' &&
    (/BYMONTH=|BYWEEKNO|BYYEARDAY|BYSETPOS/i.test(w.rrule) || (/BYMONTHDAY/i.test(w.rrule) && /BYDAY/i.test(w.rrule)));

  // In a worker: a blocking call is reported with its input after DEADLINE_MS instead of hanging the suite.
  // An evaluation's own budget is 250 ms; this deadline only has to tell a blocked evaluation (the bugs
  // found here blocked for many seconds to minutes) from one starved of CPU by the integration suites
  // that share the two cores in `yarn test` (a CI run saw 5.6 s for a bounded one). The specific slow
  // inputs below keep their own 2 s deadlines.
  const DEADLINE_MS = 15_000;
  type Verdict = {
    ok: boolean;
    name?: string;
    message?: string;
    cpuMs?: number;
    verdict?: FreezeVerdict & { until?: number };
  };
  const worker = new DeadlineWorker<{ windows: SourcedWindow[]; now: number }, Verdict>(
    new URL('./freezeWorker.ts', import.meta.url),
    DEADLINE_MS,
  );
  beforeAll(() => worker.call({ windows: [], now: 0 }), 30_000); // started before the clock runs
  afterAll(() => worker.close());

  it('evaluateFreeze never throws nor blocks: an invalid window freezes (fail closed) and says why', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(process.env.FUZZ_KNOWN_SLOW ? window : window.filter((w) => !maybeNeverOccurs(w)), {
          minLength: 1,
          maxLength: 2,
        }),
        fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2060-01-01T00:00:00Z'), noInvalidDate: true }),
        async (windows, now) => {
          const r = await worker.call({
            windows: windows.map((w, i) => ({ window: w, source: `Environment e${i}` })),
            now: now.getTime(),
          });
          expect(r.ok, `${r.name}: ${r.message}`).toBe(true);
          const v = r.verdict!;
          expect(typeof v.frozen).toBe('boolean');
          if (v.invalid !== undefined) {
            expect(v.frozen).toBe(true);
            expect(v.invalid).toMatch(/^freeze window ".*" \(Environment e\d\): /s);
          }
          if (v.until !== undefined) expect(v.until).toBeGreaterThan(now.getTime());
        },
      ),
      // No shrinking: each shrink step of a blocking input would wait out the deadline again.
      { ...runs(300), endOnFailure: true },
    );
  }, 120_000);

  // Found by this suite: these windows used to block the event loop for seconds to minutes (what
  // costs the controller its lease). Now evaluation is bounded and fails closed past its budget.
  // The bound is asserted on the CPU time the evaluation cost (the worker measures it), not on the
  // wall clock, which other work on the machine stretches: at most the hard limit, plus a margin
  // for the thread's own bookkeeping.
  const quick = async (rrule: string, duration: string) => {
    const r = await worker.call({
      windows: [{ window: { name: 'w', kind: 'deny', rrule, duration, timeZone: 'UTC' }, source: 'Environment prod' }],
      now: Date.parse('2026-06-01T10:00:00Z'),
    });
    expect(r.ok, `${rrule} ${duration}: ${r.message}`).toBe(true);
    expect(r.verdict?.frozen).toBe(true);
    expect(r.cpuMs, `${rrule} ${duration}: CPU time of the evaluation`).toBeLessThan(FREEZE_HARD_LIMIT_MS * 1.5);
  };
  it('evaluateFreeze costs bounded CPU time for back-to-back RRULE deny windows (fails closed past its budget)', async () => {
    await quick('FREQ=MINUTELY', '2m');
    await quick('FREQ=HOURLY', '1h');
  });
  // Found by this suite: for an RRULE that never occurs, one call into the rrule library walks towards
  // year 9999 and cannot be interrupted by the cooperative budget; the hard limit (a vm timeout) stops it.
  it('evaluateFreeze stops at its hard limit for never-occurring RRULE windows (bounded CPU time, fails closed)', async () => {
    await quick('FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=30', '999999h');
    await quick('FREQ=DAILY;BYDAY=FR;BYMONTH=2;INTERVAL=2;BYMONTHDAY=30', '8784h');
    // A CI run's counterexample, made never-occurring (its BYDAY=1MO is now refused: RFC 5545 3.3.10).
    await quick('DTSTART:19991231T235959\nFREQ=MINUTELY;BYHOUR=16;BYDAY=MO,SU;BYMONTH=2;BYMONTHDAY=30', '90s');
  });
});
