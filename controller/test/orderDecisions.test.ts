import type { AppProgress } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { dependsOnCycle, dependsOnCycleMessage, orderDecisions, planOrder } from '../src/reconcile/orderDecisions.js';

/** The plan's Applications: name → spec.dependsOn. */
const appsOf = (deps: Record<string, string[]>) =>
  new Map(Object.entries(deps).map(([n, dependsOn]) => [n, { spec: { dependsOn } } as never]));

/** A release: migration first, backend after it, frontend after both (and after an app not in the plan). */
const RELEASE = { migration: [], backend: ['migration'], frontend: ['backend', 'migration', 'cdn'] };

describe('planOrder', () => {
  it('a promotion goes after dependsOn within the plan; an app not in the plan is ignored', () => {
    expect(Object.fromEntries(planOrder(appsOf(RELEASE), false))).toEqual({
      migration: [],
      backend: ['migration'],
      frontend: ['backend', 'migration'],
    });
  });
  it('a rollback goes the other way: an app after those that depend on it', () => {
    expect(Object.fromEntries(planOrder(appsOf(RELEASE), true))).toEqual({
      migration: ['backend', 'frontend'],
      backend: ['frontend'],
      frontend: [],
    });
  });
});

describe('dependsOnCycle', () => {
  it.each<[string, Record<string, string[]>, string[] | undefined]>([
    ['none', RELEASE, undefined],
    ['two apps', { api: ['db'], db: ['api'] }, ['api', 'db', 'api']],
    ['an app on itself', { api: ['api'] }, ['api', 'api']],
    [
      'three apps, entered from outside the cycle',
      { web: ['api'], api: ['db'], db: ['cache'], cache: ['api'] },
      ['api', 'db', 'cache', 'api'],
    ],
    ['closed only through an app not in the plan: none', { api: ['db'], db: ['cdn'] }, undefined],
    ['a diamond is no cycle', { a: ['b', 'c'], b: ['d'], c: ['d'], d: [] }, undefined],
  ])('%s', (_what, deps, cycle) => {
    expect(dependsOnCycle(appsOf(deps))).toEqual(cycle);
  });
  it('the message names the cycle and each edge to remove', () => {
    expect(dependsOnCycleMessage(['api', 'db', 'api'])).toBe(
      'dependsOn cycle: api → db → api; remove one edge: db from spec.dependsOn of Application api, or api from spec.dependsOn of Application db',
    );
  });
});

type Phase = AppProgress['phase'];
/** Apps of a plan by phase; `heldBy` marks one a failed dependency held. */
const progress = (phases: Record<string, Phase | [Phase, string]>): AppProgress[] =>
  Object.entries(phases).map(([application, p]) =>
    Array.isArray(p) ? { application, phase: p[0], heldBy: p[1] } : { application, phase: p },
  );

describe('orderDecisions', () => {
  const promote = planOrder(appsOf(RELEASE), false);
  const rollback = planOrder(appsOf(RELEASE), true);
  const independent = planOrder(appsOf({ a: [], b: [], c: [], d: [] }), false);
  it.each<
    [
      string,
      ReturnType<typeof planOrder>,
      Record<string, Phase | [Phase, string]>,
      number,
      { work: string[]; waiting?: Record<string, string[]>; held?: Record<string, string>; blocked?: string[] },
      string[]?,
    ]
  >([
    [
      'nothing started: the app with no dependency starts, the others wait for what has not succeeded',
      promote,
      { migration: 'Pending', backend: 'Pending', frontend: 'Pending' },
      4,
      { work: ['migration'], waiting: { backend: ['migration'], frontend: ['backend', 'migration'] } },
    ],
    [
      'the dependency in flight: its dependants still wait',
      promote,
      { migration: 'RollingOut', backend: 'Pending', frontend: 'Pending' },
      4,
      { work: ['migration'], waiting: { backend: ['migration'], frontend: ['backend', 'migration'] } },
    ],
    [
      'the dependency succeeded: the next starts; the last waits for it only',
      promote,
      { migration: 'Succeeded', backend: 'Pending', frontend: 'Pending' },
      4,
      { work: ['backend'], waiting: { frontend: ['backend'] } },
    ],
    [
      'every dependency succeeded: the last starts',
      promote,
      { migration: 'Succeeded', backend: 'Succeeded', frontend: 'Pending' },
      4,
      { work: ['frontend'] },
    ],
    [
      'a dependency failed: its dependant is held by it',
      promote,
      { migration: 'Succeeded', backend: 'Failed', frontend: 'Pending' },
      4,
      { work: [], held: { frontend: 'backend' } },
    ],
    [
      'the first failed: every app after it is held by it, directly or through another held app',
      promote,
      { migration: 'Failed', backend: 'Pending', frontend: 'Pending' },
      4,
      { work: [], held: { backend: 'migration', frontend: 'migration' } },
    ],
    [
      'an app held in an earlier pass holds its dependants by the same failure',
      promote,
      { migration: 'Failed', backend: ['Failed', 'migration'], frontend: 'Pending' },
      4,
      { work: [], held: { frontend: 'migration' } },
    ],
    [
      'a dependency rolled back (a failed verification) holds too',
      promote,
      { migration: 'RolledBack', backend: 'Pending', frontend: 'Pending' },
      4,
      { work: [], held: { backend: 'migration', frontend: 'migration' } },
    ],
    [
      'rollback: the dependants go first, the dependency last',
      rollback,
      { migration: 'Pending', backend: 'Pending', frontend: 'Pending' },
      4,
      { work: ['frontend'], waiting: { migration: ['backend', 'frontend'], backend: ['frontend'] } },
    ],
    [
      'rollback: a dependant that was not restored holds what it depends on',
      rollback,
      { migration: 'Pending', backend: 'Pending', frontend: 'Failed' },
      4,
      { work: [], held: { backend: 'frontend', migration: 'frontend' } },
    ],
    [
      'no order: pending apps fill the free slots in plan order beside those in flight',
      independent,
      { a: 'Succeeded', b: 'Writing', c: 'Pending', d: 'Pending' },
      2,
      { work: ['b', 'c'] },
    ],
    [
      'apps waiting for their dependencies take no slot',
      planOrder(appsOf({ a: [], b: ['a'], c: [] }), false),
      { a: 'Pending', b: 'Pending', c: 'Pending' },
      2,
      { work: ['a', 'c'], waiting: { b: ['a'] } },
    ],
    [
      'another plan blocks an app the order lets start: it waits, and the next one takes its slot',
      independent,
      { a: 'Pending', b: 'Pending', c: 'Pending', d: 'Pending' },
      2,
      { work: ['b', 'c'], blocked: ['a'] },
      ['a'],
    ],
    [
      'an app waiting for its dependencies is not asked about other plans',
      promote,
      { migration: 'Pending', backend: 'Pending', frontend: 'Pending' },
      4,
      { work: [], waiting: { backend: ['migration'], frontend: ['backend', 'migration'] }, blocked: ['migration'] },
      ['migration', 'backend', 'frontend'],
    ],
  ])('%s', (_what, order, phases, concurrency, want, blockedApps = []) => {
    const asked: string[] = [];
    const d = orderDecisions(progress(phases), order, concurrency, (app) => {
      asked.push(app);
      return blockedApps.includes(app);
    });
    expect({
      work: d.work.map((a) => a.application),
      waiting: Object.fromEntries(d.waiting),
      held: Object.fromEntries(d.held),
      blocked: [...d.blocked],
    }).toEqual({ waiting: {}, held: {}, blocked: [], ...want });
    // Other plans are asked about the apps the order lets start, and only those.
    const free = Object.keys(phases).filter(
      (n) =>
        progress(phases).find((a) => a.application === n)?.phase === 'Pending' && !d.waiting.has(n) && !d.held.has(n),
    );
    expect(asked).toEqual(free);
  });
});
