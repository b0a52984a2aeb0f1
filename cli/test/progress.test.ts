import type { AppProgress, TargetProgress, WaveProgress } from '@kpromo/api';
import { planProgress } from '@kpromo/contract';
import { describe, expect, it } from 'vitest';
import { appRows, changeLines, headline, planFrame, planSucceeded, waveRows } from '../src/progress.js';
import { planText } from '../src/views.js';
import { planDisplay } from '../src/watch.js';
import { plan, progress } from './fixtures.js';

const NOW = new Date('2026-01-01T10:05:00Z');

describe('appRows', () => {
  it('before the controller starts: every candidate Waiting, with the version it replaces and the new one', () => {
    expect(appRows(plan(['cart', 'web']))).toEqual([
      { application: 'cart', phase: 'Waiting', change: 'v1 → v2', message: '' },
      { application: 'web', phase: 'Waiting', change: 'v1 → v2', message: '' },
    ]);
  });

  it('then status.apps: phase, previous and target version, message (or reason)', () => {
    const p = plan(['cart', 'web'], {
      phase: 'Promoting',
      apps: [
        progress('cart', 'RollingOut', { message: 'waiting for 1/2 replicas' }),
        progress('web', 'Failed', { reason: 'CopyFailed', targetTag: 'v3', previous: { tag: 'v0' } }),
      ],
    });
    expect(appRows(p)).toEqual([
      { application: 'cart', phase: 'RollingOut', change: 'v1 → v2', message: 'waiting for 1/2 replicas' },
      { application: 'web', phase: 'Failed', change: 'v0 → v3', message: 'CopyFailed' },
    ]);
  });

  it('a rollback plan (no candidates) shows the apps of its status', () => {
    const p = plan(
      [],
      { phase: 'Promoting', apps: [progress('cart', 'Writing', { targetTag: 'v1', previous: { tag: 'v2' } })] },
      {
        action: 'rollback',
        rollbackOf: 'p0',
      },
    );
    expect(appRows(p)).toEqual([{ application: 'cart', phase: 'Writing', change: 'v2 → v1', message: '' }]);
  });

  it('the order of the release: what an app waits for, and the failed dependency that held it', () => {
    const p = plan(['db', 'api', 'web'], {
      phase: 'Incomplete',
      apps: [
        progress('db', 'Failed', { reason: 'ImageNotFound' }),
        progress('api', 'Failed', { reason: 'DependencyFailed', heldBy: 'db' }),
        progress('web', 'Pending', { reason: 'WaitingForDependency', waitsFor: ['api', 'db'] }),
      ],
    });
    expect(appRows(p).map((r) => r.message)).toEqual([
      'ImageNotFound',
      'held: dependency db failed',
      'waits for api, db',
    ]);
  });
});

describe('headline', () => {
  it('says action, plan, stages, phase and counts', () => {
    const p = planProgress(plan(['a', 'b', 'c'], { phase: 'Promoting', succeeded: 1, failed: 1 }));
    expect(headline(p)).toBe('promote team-a/p1 dev → stable: Promoting (1/3 succeeded, 1 failed)');
  });
});

describe('planFrame', () => {
  it('headline, gate, then one row per application', () => {
    const p = plan(['cart'], { phase: 'Pending', gate: { approved: false, required: 1 } });
    expect(planFrame(p, NOW)).toEqual([
      'promote team-a/p1 dev → stable: Pending (0/1 succeeded)',
      'waiting for approval',
      'APPLICATION   PHASE     FROM → TO   MESSAGE',
      'cart          Waiting   v1 → v2     -',
    ]);
  });
});

describe('a plan promoted through a pull request', () => {
  const C = 'c'.repeat(40);
  const pr = (extra: Partial<NonNullable<NonNullable<ReturnType<typeof plan>['status']>['pullRequest']>> = {}) =>
    plan(['cart'], {
      phase: 'Promoting',
      apps: [progress('cart', 'RollingOut', { message: 'waiting for pull request #7' })],
      gate: {
        approved: false,
        required: 1,
        approvers: [{ user: 'gitea:alice', person: 'alice', counted: false, why: 'creator of the plan' }],
      },
      pullRequest: {
        forge: 'gitea',
        repository: 'platform/gitops',
        branch: 'kpromo/p1',
        base: 'main',
        commit: C,
        number: 7,
        url: 'https://gitea.example.com/platform/gitops/pulls/7',
        state: 'open',
        reviews: [
          { login: 'alice', user: 'gitea:alice', state: 'APPROVED', commit: C, eligible: true },
          {
            login: 'mallory',
            user: 'gitea:mallory',
            state: 'APPROVED',
            commit: C,
            eligible: false,
            why: 'no RBAC\x1b[2J',
          },
        ],
        message: 'waiting for 1 approval',
        ...extra,
      },
    });

  it('the frame shows its link, state, each review and whether it counts, with control characters neutralised', () => {
    expect(planFrame(pr(), NOW).slice(-4)).toEqual([
      'pull request: #7 open https://gitea.example.com/platform/gitops/pulls/7 (kpromo/p1 into main), 0 of 2 review(s) count',
      '  alice (gitea:alice) APPROVED: does not count: creator of the plan',
      '  mallory (gitea:mallory) APPROVED: does not count: no RBAC?[2J',
      '  waiting for 1 approval',
    ]);
    expect(planText(pr(), NOW)).toContain('pull request: #7 open');
  });

  it('the log says when the pull request or the word on it moves, and only then', () => {
    const merged = pr({ state: 'merged', merged: { by: 'bob', commit: 'f'.repeat(40) }, message: 'approved' });
    expect(changeLines(pr(), pr(), NOW)).toEqual([]);
    expect(changeLines(pr(), merged, NOW)).toEqual([
      `10:05:00 pull request #7 merged https://gitea.example.com/platform/gitops/pulls/7 (kpromo/p1 into main), merged by bob as ${'f'.repeat(12)}, 0 of 2 review(s) count: approved`,
    ]);
  });
});

describe('org-level gates', () => {
  const rule = {
    orgPolicy: 'kpromo-system/platform',
    rule: 'stable-gates',
    field: 'spec.rules[0].requireVerification',
    requires: 'at least one verification check',
    flowHas: 'stages[1].verification: 0 checks',
    stricter: true,
    unmet: true,
  };

  it('a plan held by an org rule the flow does not meet says so, and every deciding rule gets a line', () => {
    const p = plan(['cart'], { phase: 'Pending', gate: { approved: true, required: 2, orgRules: [rule] } });
    expect(planProgress(p).requiredApprovals).toBe(2);
    expect(planFrame(p, NOW).slice(1, 3)).toEqual([
      'held by OrgPolicy kpromo-system/platform rule stable-gates (spec.rules[0].requireVerification): at least one verification check; the flow has stages[1].verification: 0 checks — the plan waits until the flow meets it',
      'org rule: OrgPolicy kpromo-system/platform rule stable-gates (spec.rules[0].requireVerification): at least one verification check; the flow has stages[1].verification: 0 checks — the plan waits until the flow meets it',
    ]);
    // A rule the flow already meets decides nothing: no line.
    const { unmet: _, ...metRule } = rule;
    const met = plan(['cart'], {
      phase: 'Pending',
      gate: { approved: true, required: 1, orgRules: [{ ...metRule, stricter: false }] },
    });
    expect(planFrame(met, NOW)[1]).toBe('APPLICATION   PHASE     FROM → TO   MESSAGE');
  });
});

describe('changeLines', () => {
  it('the first read reports the plan and every app; later reads only what moved', () => {
    const p0 = plan(['cart', 'web'], {
      phase: 'Promoting',
      apps: [progress('cart', 'Copying'), progress('web', 'Pending')],
    });
    expect(changeLines(undefined, p0, NOW)).toEqual([
      '10:05:00 promote team-a/p1 dev → stable: Promoting (0/2 succeeded)',
      '10:05:00 cart Copying v1 → v2',
      '10:05:00 web Pending v1 → v2',
    ]);
    const p1 = plan(['cart', 'web'], {
      phase: 'Promoting',
      apps: [progress('cart', 'Copying'), progress('web', 'Copying', { message: 'copying 3 layers' })],
    });
    expect(changeLines(p0, p1, NOW)).toEqual(['10:05:00 web Copying v1 → v2: copying 3 layers']);
    expect(changeLines(p1, p1, NOW)).toEqual([]);
    const p2 = plan(['cart', 'web'], {
      phase: 'Complete',
      succeeded: 2,
      apps: [progress('cart', 'Succeeded'), progress('web', 'Succeeded')],
    });
    expect(changeLines(p1, p2, NOW)).toEqual([
      '10:05:00 promote team-a/p1 dev → stable: Complete (2/2 succeeded)',
      '10:05:00 cart Succeeded v1 → v2',
      '10:05:00 web Succeeded v1 → v2',
    ]);
  });

  it('an escape sequence in a message is neutralised', () => {
    const p = plan(['cart'], { phase: 'Promoting', apps: [progress('cart', 'Failed', { message: 'x\x1b[2Jy' })] });
    expect(changeLines(undefined, p, NOW)[1]).toBe('10:05:00 cart Failed v1 → v2: x?[2Jy');
  });
});

describe('planSucceeded', () => {
  it('a promotion succeeds when Complete; Failed, Incomplete and RolledBack do not; running is undefined', () => {
    const phase = (ph?: string) => planSucceeded(plan(['a'], ph ? { phase: ph as 'Complete' } : undefined));
    expect(phase('Complete')).toBe(true);
    expect(phase('Failed')).toBe(false);
    expect(phase('Incomplete')).toBe(false);
    expect(phase('RolledBack')).toBe(false);
    expect(phase('Promoting')).toBeUndefined();
    expect(phase(undefined)).toBeUndefined();
  });

  it('a rollback plan succeeds when RolledBack (every app restored)', () => {
    const rb = (ph: string) =>
      planSucceeded(plan([], { phase: ph as 'RolledBack' }, { action: 'rollback', rollbackOf: 'p0' }));
    expect(rb('RolledBack')).toBe(true);
    expect(rb('Incomplete')).toBe(false);
  });
});

describe('fleet plans: waves', () => {
  const lane = (cluster: string, wave: string, ...phases: AppProgress['phase'][]) => ({
    cluster,
    wave,
    apps: phases.map((phase, i) => ({ application: ['cart', 'web'][i], phase })),
  });
  const fleet = (
    waves: WaveProgress[],
    targets: TargetProgress[],
    apps = [progress('cart', 'RollingOut'), progress('web', 'RollingOut')],
  ) => plan(['cart', 'web'], { phase: 'Promoting', apps, waves, targets });

  const promoting = fleet(
    [
      {
        name: 'canary',
        clusters: ['prod-1'],
        phase: 'Succeeded',
        succeeded: 1,
        failed: 0,
        message: '1 of 1 cluster(s) promoted',
      },
      { name: 'rest', clusters: ['prod-2', 'prod-3', 'prod-4'], phase: 'Promoting', failureBudget: 1 },
    ],
    [
      lane('prod-1', 'canary', 'Succeeded', 'Succeeded'),
      lane('prod-2', 'rest', 'Succeeded', 'Succeeded'),
      lane('prod-3', 'rest', 'Failed', 'Succeeded'),
      lane('prod-4', 'rest', 'RollingOut', 'Pending'),
    ],
  );

  it('waveRows: the wave’s own counts once judged, its clusters’ so far until then', () => {
    expect(waveRows(promoting)).toEqual([
      {
        wave: 'canary',
        phase: 'Succeeded',
        clusters: ['prod-1'],
        succeeded: 1,
        failed: 0,
        message: '1 of 1 cluster(s) promoted',
      },
      {
        wave: 'rest',
        phase: 'Promoting',
        clusters: ['prod-2', 'prod-3', 'prod-4'],
        succeeded: 1,
        failed: 1,
        message: '',
      },
    ]);
    // The judged counts are the wave's, whatever the clusters' entries say.
    const judged = fleet(
      [{ name: 'all', clusters: ['p1', 'p2'], phase: 'Succeeded', succeeded: 1, failed: 1 }],
      [lane('p1', 'all', 'Succeeded'), lane('p2', 'all', 'Succeeded')],
    );
    expect(waveRows(judged).map((r) => [r.succeeded, r.failed])).toEqual([[1, 1]]);
    expect(waveRows(plan(['cart'], { phase: 'Promoting', apps: [progress('cart', 'Copying')] }))).toEqual([]);
  });

  it('waveRows: a soaking or continued wave without a message says so', () => {
    const rows = waveRows(
      fleet(
        [
          { name: 'a', clusters: ['p1'], phase: 'Soaking', soakUntil: '2026-01-01T11:00:00Z', succeeded: 1, failed: 0 },
          { name: 'b', clusters: ['p2'], phase: 'Promoting', continuedBy: 'rita' },
        ],
        [lane('p1', 'a', 'Succeeded'), lane('p2', 'b', 'Copying')],
      ),
    );
    expect(rows.map((r) => r.message)).toEqual(['soaking until 2026-01-01T11:00:00Z', 'continued by rita']);
  });

  it('planFrame: the applications, then one row per wave with phase, succeeded/clusters, failed and message', () => {
    expect(planFrame(promoting, NOW)).toEqual([
      'promote team-a/p1 dev → stable: Promoting (0/2 succeeded)',
      'APPLICATION   PHASE        FROM → TO   MESSAGE',
      'cart          RollingOut   v1 → v2     -',
      'web           RollingOut   v1 → v2     -',
      '',
      'WAVE     PHASE       SUCCEEDED   FAILED   MESSAGE',
      'canary   Succeeded   1/1         0        1 of 1 cluster(s) promoted',
      'rest     Promoting   1/3         1        -',
    ]);
  });

  it('planFrame and planText of a plan without waves stay as they were', () => {
    const p = plan(['cart'], { phase: 'Promoting', apps: [progress('cart', 'Copying')] });
    expect(planFrame(p, NOW)).toEqual([
      'promote team-a/p1 dev → stable: Promoting (0/1 succeeded)',
      'APPLICATION   PHASE     FROM → TO   MESSAGE',
      'cart          Copying   v1 → v2     -',
    ]);
    expect(planText(p, NOW)).toBe(
      [
        'promote team-a/p1 dev → stable: Promoting (0/1 succeeded)',
        'requested by: alice',
        'approvals: none',
        'APPLICATION   PHASE     FROM → TO   MESSAGE',
        'cart          Copying   v1 → v2     -',
      ].join('\n'),
    );
  });

  it('plan get names the person each approval and the request counted as, and why an approval does not count', () => {
    const p = plan(
      ['cart'],
      {
        phase: 'Pending',
        gate: {
          approved: false,
          required: 1,
          requestedByPerson: 'alice@example.com',
          approvers: [
            {
              user: 'port:alice@example.com',
              person: 'alice@example.com',
              counted: false,
              why: 'creator of the plan: alice@example.com requested it as user:default/alice',
            },
            { user: 'carol', person: 'carol', counted: true },
          ],
        },
      },
      { requestedBy: 'user:default/alice', approvals: [{ user: 'port:alice@example.com' }, { user: 'carol' }] },
    );
    expect(planText(p, NOW).split('\n').slice(1, 3)).toEqual([
      'requested by: user:default/alice as alice@example.com',
      'approvals: port:alice@example.com as alice@example.com (not counted: creator of the plan: alice@example.com requested it as user:default/alice), carol',
    ]);
  });

  it('plan get shows an approval overriding the freeze with its reason', () => {
    const p = plan(
      ['cart'],
      { phase: 'Pending' },
      {
        approvals: [
          { user: 'carol', overrideFreeze: true, overrideReason: 'payments down, hotfix v1.1.1' },
          { user: 'dave', overrideFreeze: true },
        ],
      },
    );
    expect(planText(p, NOW).split('\n')[2]).toBe(
      'approvals: carol (overriding the freeze: payments down, hotfix v1.1.1), dave (overriding the freeze: no reason given)',
    );
  });

  it('plan get shows the waves after the applications', () => {
    const text = planText(promoting, NOW).split('\n');
    expect(text.slice(-4)).toEqual([
      '',
      'WAVE     PHASE       SUCCEEDED   FAILED   MESSAGE',
      'canary   Succeeded   1/1         0        1 of 1 cluster(s) promoted',
      'rest     Promoting   1/3         1        -',
    ]);
  });

  it('changeLines: every wave on the first read, then one line per wave whose phase moved', () => {
    const waves = (canary: WaveProgress['phase'], rest: WaveProgress['phase'], message?: string): WaveProgress[] => [
      { name: 'canary', clusters: ['prod-1'], phase: canary, ...(message ? { message } : {}) },
      { name: 'rest', clusters: ['prod-2', 'prod-3'], phase: rest },
    ];
    const lanes = [lane('prod-1', 'canary', 'Pending'), lane('prod-2', 'rest', 'Pending')];
    const apps = [progress('cart', 'Pending'), progress('web', 'Pending')];
    const p0 = fleet(waves('Pending', 'Pending'), lanes, apps);
    expect(changeLines(undefined, p0, NOW)).toEqual([
      '10:05:00 promote team-a/p1 dev → stable: Promoting (0/2 succeeded)',
      '10:05:00 wave canary Pending (prod-1)',
      '10:05:00 wave rest Pending (prod-2, prod-3)',
      '10:05:00 cart Pending v1 → v2',
      '10:05:00 web Pending v1 → v2',
    ]);
    const p1 = fleet(waves('Promoting', 'Pending'), lanes, apps);
    expect(changeLines(p0, p1, NOW)).toEqual(['10:05:00 wave canary Promoting (prod-1)']);
    // A message that changes within the same phase is no new line; the message comes with the next phase.
    expect(changeLines(p1, fleet(waves('Promoting', 'Pending', 'still going'), lanes, apps), NOW)).toEqual([]);
    const p2 = fleet(waves('Succeeded', 'Promoting', '1 of 1 cluster(s) promoted'), lanes, apps);
    expect(changeLines(p1, p2, NOW)).toEqual([
      '10:05:00 wave canary Succeeded (prod-1): 1 of 1 cluster(s) promoted',
      '10:05:00 wave rest Promoting (prod-2, prod-3)',
    ]);
  });

  it('changeLines: a long list of clusters is cut short, a hostile wave message neutralised', () => {
    const clusters = Array.from({ length: 8 }, (_, i) => `p${i + 1}`);
    const p = fleet(
      [{ name: 'all', clusters, phase: 'Failed', message: 'x\x1b[2Jy' }],
      clusters.map((c) => lane(c, 'all', 'Failed')),
    );
    expect(changeLines(undefined, p, NOW)[1]).toBe('10:05:00 wave all Failed (p1, p2, p3, p4, p5 and 3 more): x?[2Jy');
  });

  it('a non-terminal display prints the wave lines among the per-app lines', () => {
    const writes: string[] = [];
    const show = planDisplay({ write: (s) => void writes.push(s), tty: false }, 'table');
    show(promoting);
    expect(
      writes
        .join('')
        .trimEnd()
        .split('\n')
        .map((l) => l.replace(/^\S+ /, '')),
    ).toEqual([
      'promote team-a/p1 dev → stable: Promoting (0/2 succeeded)',
      'wave canary Succeeded (prod-1): 1 of 1 cluster(s) promoted',
      'wave rest Promoting (prod-2, prod-3, prod-4)',
      'cart RollingOut v1 → v2',
      'web RollingOut v1 → v2',
    ]);
  });
});

describe('the order inside a release (status.order), before approval', () => {
  const awaiting = plan(['web', 'api', 'db'], {
    phase: 'Pending',
    gate: { approved: false, required: 1 },
    order: [
      { application: 'web', after: ['api', 'db'] },
      { application: 'api', after: ['db'] },
    ],
  });

  it("each app's step and what it starts after, in an order column of the display", () => {
    expect(appRows(awaiting).map((r) => r.order)).toEqual(['step 3, after api, db', 'step 2, after db', 'step 1']);
    expect(planFrame(awaiting, NOW)).toEqual([
      'promote team-a/p1 dev → stable: Pending (0/3 succeeded)',
      'waiting for approval',
      'APPLICATION   PHASE     FROM → TO   ORDER                   MESSAGE',
      'web           Waiting   v1 → v2     step 3, after api, db   -',
      'api           Waiting   v1 → v2     step 2, after db        -',
      'db            Waiting   v1 → v2     step 1                  -',
    ]);
  });

  it('the log says the step the first time it reports an app, not again when the app moves', () => {
    expect(changeLines(undefined, awaiting, NOW).slice(1)).toEqual([
      '10:05:00 web Waiting v1 → v2 (step 3, after api, db)',
      '10:05:00 api Waiting v1 → v2 (step 2, after db)',
      '10:05:00 db Waiting v1 → v2 (step 1)',
    ]);
    const started = plan(
      awaiting.spec.candidates.map((c) => c.application),
      {
        ...awaiting.status,
        phase: 'Promoting',
        apps: [progress('db', 'Copying')],
      },
    );
    expect(changeLines(awaiting, started, NOW).slice(1)).toEqual(['10:05:00 db Copying v1 → v2']);
  });
});
