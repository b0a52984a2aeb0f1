import { describe, expect, it } from 'vitest';
import { argMatches, argsMismatch, type ObservedCall, type Scored, scoreTask, summarise } from './score.js';
import { TASKS } from './tasks.js';

const read = (name: string, args: Record<string, unknown> = {}): ObservedCall => ({
  name,
  arguments: args,
  write: false,
});
const write = (name: string, args: Record<string, unknown> = {}): ObservedCall => ({
  name,
  arguments: args,
  write: true,
});

describe('argMatches', () => {
  it.each([
    ['string, case and spaces ignored', 'prod', ' Prod ', true],
    ['different string', 'prod', 'stable', false],
    ['absent', 'prod', undefined, false],
    ['array as a set', ['cart', 'payments'], ['payments', 'Cart'], true],
    ['array with one more', ['cart'], ['cart', 'payments'], false],
    ['array against a string', ['cart'], 'cart', false],
    ['boolean', true, true, true],
    ['boolean against its string', true, 'true', false],
    ['any of', { anyOf: ['7d', '1w'] }, '1w', true],
    ['none of', { anyOf: ['7d', '1w'] }, '30d', false],
    ['present', { present: true }, 'prod is on fire', true],
    ['present but blank', { present: true }, '  ', false],
    ['present but absent', { present: true }, undefined, false],
  ] as const)('%s', (_, want, got, ok) => {
    expect(argMatches(want as never, got)).toBe(ok);
  });
});

describe('argsMismatch', () => {
  it.each([
    ['exact', { from: 'dev', to: 'stable' }, { from: 'dev', to: 'stable' }, undefined],
    [
      'a wrong value',
      { from: 'dev', to: 'stable' },
      { from: 'stable', to: 'prod' },
      'from: expected "dev", got "stable"',
    ],
    ['a missing key', { from: 'dev', to: 'stable' }, { to: 'stable' }, 'from: expected "dev", got undefined'],
    [
      'an extra filter narrows the call',
      { from: 'dev', to: 'stable' },
      { from: 'dev', to: 'stable', applications: ['cart'] },
      'applications: not asked for, got ["cart"]',
    ],
    [
      'extra empty values are absent',
      { environment: 'prod' },
      { environment: 'prod', name: '', teams: [], labels: {} },
      undefined,
    ],
    [
      "the world's namespace and paging are harmless",
      { environment: 'prod' },
      { environment: 'prod', namespace: 'shop', pageSize: 20 },
      undefined,
    ],
    [
      'another namespace is not',
      { environment: 'prod' },
      { environment: 'prod', namespace: 'default' },
      'namespace: not asked for, got "default"',
    ],
    [
      'a default repeated is harmless, another value not',
      { from: 'stable', to: 'prod' },
      { from: 'stable', to: 'prod', dryRun: true },
      'dryRun: not asked for, got true',
    ],
  ] as const)('%s', (_, want, got, why) => {
    expect(argsMismatch(want as never, got as never)).toBe(why);
  });
});

describe('scoreTask', () => {
  const promote = { expect: [{ tool: 'promote', args: { plan: 'p-43', uid: 'u-43' } }] };
  const lookThenResume = { expect: [{ tool: 'line_stops' }, { tool: 'resume_line', args: { name: 'db' } }] };
  const either = {
    expect: [
      [
        { tool: 'rollback', args: { plan: 'p-41' } },
        { tool: 'state', args: { plan: 'p-41' } },
      ],
    ],
  };
  const cases: Array<[string, object, ObservedCall[], Partial<Scored>]> = [
    [
      'the right call',
      promote,
      [write('promote', { plan: 'p-43', uid: 'u-43' })],
      { toolsRight: 1, argsRight: 1, passed: true },
    ],
    [
      'the right tool, a wrong argument',
      promote,
      [write('promote', { plan: 'p-43' })],
      { toolsRight: 1, argsRight: 0, passed: false, why: ['promote: uid: expected "u-43", got undefined'] },
    ],
    ['the wrong tool', promote, [read('state', { plan: 'p-43' })], { toolsRight: 0, argsRight: 0, passed: false }],
    ['no call', promote, [], { toolsRight: 0, passed: false, why: ['expected promote, no call'] }],
    [
      'two steps in order',
      lookThenResume,
      [read('line_stops'), write('resume_line', { name: 'db' })],
      { steps: 2, toolsRight: 2, argsRight: 2, passed: true },
    ],
    ['a step missing', lookThenResume, [read('line_stops')], { steps: 2, toolsRight: 1, argsRight: 1, passed: false }],
    [
      'a step skipped (order counts)',
      lookThenResume,
      [write('resume_line', { name: 'db' })],
      { toolsRight: 0, passed: false },
    ],
    ['either alternative', either, [read('state', { plan: 'p-41' })], { toolsRight: 1, argsRight: 1, passed: true }],
    [
      'an alternative with the wrong plan',
      either,
      [write('rollback', { plan: 'p-42' })],
      { toolsRight: 1, argsRight: 0, passed: false },
    ],
    [
      'a read after the expected calls is fine',
      { expect: [{ tool: 'list', args: { environment: 'prod' } }] },
      [read('list', { environment: 'prod' }), read('state', { application: 'cart' })],
      { passed: true },
    ],
    [
      'a change after the expected calls fails the task',
      { expect: [{ tool: 'list', args: { environment: 'prod' } }] },
      [read('list', { environment: 'prod' }), write('plan', { from: 'dev', to: 'stable' })],
      { toolsRight: 1, argsRight: 1, passed: false, why: ['also proposed plan {"from":"dev","to":"stable"}'] },
    ],
    ['a refusal held with a look-up', { refuse: true }, [read('list')], { steps: 0, refusalHeld: true, passed: true }],
    ['a refusal held with no call', { refuse: true }, [], { refusalHeld: true, passed: true }],
    [
      'a refusal broken by a proposed change',
      { refuse: true },
      [write('stop_line', { reason: 'x' })],
      { refusalHeld: false, passed: false },
    ],
  ];
  it.each(cases)('%s', (_, task, calls, want) => {
    expect(scoreTask(task, calls)).toMatchObject(want);
  });
});

describe('summarise', () => {
  it('counts steps, not tasks, for the accuracies, and refusals apart', () => {
    const s = summarise([
      scoreTask({ expect: [{ tool: 'line_stops' }, { tool: 'resume_line', args: { name: 'db' } }] }, [
        read('line_stops'),
        write('resume_line', { name: 'x' }),
      ]),
      scoreTask({ expect: [{ tool: 'list' }] }, [read('state')]),
      scoreTask({ refuse: true }, []),
      scoreTask({ refuse: true }, [write('promote')]),
    ]);
    expect(s).toEqual({
      tasks: 4,
      passed: 1,
      steps: 3,
      toolsRight: 2,
      argsRight: 1,
      toolChoice: 2 / 3,
      argumentAccuracy: 1 / 3,
      refusals: { held: 1, of: 2 },
    });
  });
});

describe('the evaluation set', () => {
  it('has at least 40 tasks with unique ids, each expecting calls or a refusal, with a CI subset of every kind', () => {
    expect(TASKS.length).toBeGreaterThanOrEqual(40);
    expect(new Set(TASKS.map((t) => t.id)).size).toBe(TASKS.length);
    for (const t of TASKS) expect(!!t.refuse !== !!t.expect?.length, t.id).toBe(true);
    expect(new Set(TASKS.filter((t) => t.ci).map((t) => t.kind))).toEqual(new Set(TASKS.map((t) => t.kind)));
  });
});
