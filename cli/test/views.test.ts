import type { ApplicationView, EnvironmentView } from '@kpromo/contract';
import { describe, expect, it } from 'vitest';
import { age, appsTable, diffText, environmentOrder, envsTable, plansTable, versionCell } from '../src/views.js';
import { dg, plan } from './fixtures.js';

const env = (name: string, tier?: string, namespace = 'team-a'): EnvironmentView => ({
  namespace,
  name,
  ...(tier ? { tier } : {}),
  cluster: { context: name },
  targetNamespace: 'shop',
  registry: `reg-${name}:5000`,
  delivery: 'patch',
  synced: name !== 'prod',
});

const view = (name: string, namespace = 'team-a'): ApplicationView => ({
  namespace,
  name,
  owner: 'team-shop',
  repository: `shop/${name}`,
  labels: {},
  versions: [
    { environment: 'prod', tag: 'v1', digest: dg('1'), health: 'Healthy' },
    { environment: 'dev', tag: 'v3', digest: dg('3'), health: 'Degraded' },
    { environment: 'stable', digest: dg('2'), health: 'Healthy' },
  ],
});

describe('environmentOrder', () => {
  it('orders by tier (development → production), then as listed; no tier goes last', () => {
    expect(
      environmentOrder([env('prod', 'production'), env('qa'), env('dev', 'development'), env('stable', 'staging')]),
    ).toEqual(['dev', 'stable', 'prod', 'qa']);
  });
});

describe('appsTable', () => {
  it('one column per environment in promotion order; tag, else short digest; health unless Healthy', () => {
    expect(
      appsTable([view('cart')], { allNamespaces: false, namespace: 'team-a', environments: ['dev', 'stable', 'prod'] }),
    ).toBe(`NAME   OWNER       DEV             STABLE                PROD
cart   team-shop   v3 (Degraded)   sha256:222222222222   v1`);
  });

  it('a DRIFT column only when an application drifted: where, what runs, what was delivered, who wrote it', () => {
    const drifted: ApplicationView = {
      ...view('cart'),
      drift: [
        {
          environment: 'prod',
          expected: { tag: 'v1', digest: dg('1'), plan: 'p1' },
          found: { digest: dg('9') },
          since: '2026-01-01T00:00:00Z',
          changedBy: 'kubectl-patch',
        },
      ],
    };
    const t = appsTable([drifted, view('web')], {
      allNamespaces: false,
      namespace: 'team-a',
      environments: ['dev', 'stable', 'prod'],
    });
    const [head, cart, web] = t.split('\n');
    expect(head).toMatch(/PROD\s+DRIFT$/);
    expect(cart).toMatch(/v1\s+prod: runs sha256:999999999999, not v1 \(image written by kubectl-patch\)$/);
    expect(web).toMatch(/v1\s+-$/);
    expect(appsTable([view('web')], { allNamespaces: false, namespace: 'team-a', environments: [] })).not.toContain(
      'DRIFT',
    );
  });

  it('an AFTER column only when an application declares an order (spec.dependsOn)', () => {
    const t = appsTable([{ ...view('web'), dependsOn: ['api', 'db'] }, view('db')], {
      allNamespaces: false,
      namespace: 'team-a',
      environments: ['dev', 'stable', 'prod'],
    });
    const [head, web, db] = t.split('\n');
    expect(head).toMatch(/PROD\s+AFTER$/);
    expect(web).toMatch(/v1\s+api, db$/);
    expect(db).toMatch(/v1\s+-$/);
    expect(appsTable([view('web')], { allNamespaces: false, namespace: 'team-a', environments: [] })).not.toContain(
      'AFTER',
    );
  });

  it('with --all-namespaces a NAMESPACE column first', () => {
    const t = appsTable([view('cart', 'a'), view('web', 'b')], {
      allNamespaces: true,
      namespace: 'x',
      environments: [],
    });
    expect(t.split('\n').map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      ['NAMESPACE', 'NAME'],
      ['a', 'cart'],
      ['b', 'web'],
    ]);
  });

  it('says so when there are none', () => {
    expect(appsTable([], { allNamespaces: false, namespace: 'team-a', environments: [] })).toBe(
      'No applications found in namespace team-a.',
    );
  });

  it('versionCell: "missing" without a workload, "?" when unreadable, the health otherwise', () => {
    expect(versionCell({ environment: 'x', health: 'Missing' })).toBe('missing');
    expect(versionCell({ environment: 'x', health: 'Unknown' })).toBe('?');
    expect(versionCell({ environment: 'x', health: 'Progressing' })).toBe('- (Progressing)');
  });
});

describe('envsTable', () => {
  it('rows in promotion order with cluster, target namespace, registry, delivery, synced', () => {
    expect(
      envsTable([env('prod', 'production'), env('dev', 'development')], { allNamespaces: false, namespace: 'team-a' }),
    ).toBe(`NAME   TIER          CLUSTER        TARGET NAMESPACE   REGISTRY        DELIVERY   SYNCED
dev    development   context/dev    shop               reg-dev:5000    patch      yes
prod   production    context/prod   shop               reg-prod:5000   patch      no`);
  });

  it('says under the table which automatic stage a cooldown holds, with the flow', () => {
    const message = 'cooldown: waiting until 14:32:05 UTC for dev to be quiet for 10m; will take web v1.4.2';
    const prod = {
      ...env('prod', 'production'),
      cooldowns: [
        { flow: 'main', environment: 'prod', until: '2026-12-03T14:32:05Z', candidates: 1, takes: [], message },
      ],
    };
    const text = envsTable([env('dev', 'development'), prod], { allNamespaces: false, namespace: 'team-a' });
    expect(text.split('\n').slice(-2)).toEqual(['', `prod (flow main): ${message}`]);
  });
});

describe('diffText', () => {
  it('warns of a candidate whose source runs drift, before the skipped ones', () => {
    const text = diffText({
      flow: 'main',
      from: 'stable',
      to: 'prod',
      candidates: [{ application: 'cart', from: { tag: 'v1', digest: dg('9') } }],
      sourceDrift: [{ application: 'cart', environment: 'stable', message: 'drift: stable runs v1, not v2' }],
      skipped: [],
    });
    expect(text.split('\n').at(-1)).toBe('Warning: cart in stable: drift: stable runs v1, not v2');
  });

  it('candidates with the version they replace, then what is skipped and why', () => {
    const text = diffText({
      flow: 'main',
      from: 'dev',
      to: 'stable',
      candidates: [{ application: 'cart', from: { tag: 'v2', digest: dg('2') }, to: { tag: 'v1', digest: dg('1') } }],
      skipped: [{ application: 'web', reason: 'UpToDate', message: 'stable already runs v2' }],
    });
    expect(text).toBe(`Flow main: dev → stable
APPLICATION   IN STABLE   CANDIDATE   DIGEST
cart          v1          v2          sha256:222222222222

SKIPPED   REASON     MESSAGE
web       UpToDate   stable already runs v2`);
  });

  it('lists the skipped applications the answer holds and counts the rest by reason', () => {
    const text = diffText({
      flow: 'main',
      from: 'dev',
      to: 'stable',
      candidates: [],
      skipped: [{ application: 'web', reason: 'SourceNotHealthy', message: 'not healthy in dev' }],
      skippedTotal: 4001,
      skippedByReason: { SourceNotHealthy: 1, UpToDate: 4000 },
    });
    expect(text.split('\n').slice(-1)[0]).toBe('… and 4000 more skipped (in all: 1 SourceNotHealthy, 4000 UpToDate)');
    expect(text).toContain('web       SourceNotHealthy');
  });

  it('says so when nothing is to promote', () => {
    expect(diffText({ flow: 'main', from: 'dev', to: 'stable', candidates: [], skipped: [] })).toBe(
      'Flow main: dev → stable\nNo release candidates.',
    );
  });
});

describe('plansTable', () => {
  it('name, action, stages, phase, succeeded/total, approvers, age', () => {
    const p = plan(['a', 'b'], { phase: 'Promoting', succeeded: 1 }, { approvals: [{ user: 'bob' }] });
    expect(
      plansTable([p], { allNamespaces: false, namespace: 'team-a', now: new Date('2026-01-01T13:00:00Z') }),
    ).toBe(`NAME   ACTION    FROM   TO       PHASE       APPS   APPROVED BY   AGE
p1     promote   dev    stable   Promoting   1/2    bob           3h`);
  });
});

describe('age', () => {
  it('as kubectl shows it', () => {
    const now = new Date('2026-01-10T00:00:00Z');
    const ago = (s: number) => new Date(now.getTime() - s * 1000).toISOString();
    expect([ago(5), ago(300), ago(3 * 3600), ago(3 * 86400)].map((t) => age(t, now))).toEqual(['5s', '5m', '3h', '3d']);
    expect(age(undefined, now)).toBe('');
  });
});
