import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { durationText as age, shortDigest } from '@kpromo/contract';
import { fleetPlan } from '@kpromo/test-harness/fleetPlan';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AuthError, Authenticator, loadStaticTokens } from '../src/auth/authenticator.js';
import { loadConfig } from '../src/config.js';
import { McpConfigSchema } from '../src/mcp/config.js';
import { SessionEventStore } from '../src/mcp/eventStore.js';
import { challengeSuffix, metadataPaths, protectedResourceMetadata } from '../src/mcp/oauth.js';
import { clip, REDACTED, redactDeep, redactMap } from '../src/mcp/redact.js';
import { appLine, candidateLines, planDetail, planLine } from '../src/mcp/summary.js';
import { TOOLS } from '../src/mcp/tools/index.js';
import { parseUri } from '../src/mcp/uris.js';
import { PlanOut, planOut, planOutcome } from '../src/mcp/views.js';

const file = (name: string, text: string) => {
  const p = join(tmpdir(), `mcp-unit-${process.pid}-${name}`);
  writeFileSync(p, text);
  return p;
};

describe('mcp config', () => {
  it('is read-only and disabled by default, and part of the controller config', () => {
    const c = loadConfig({ env: {} });
    expect(c.mcp).toMatchObject({ enabled: false, write: false, path: '/mcp', port: 8090 });
    // Authentication is shared by the JSON API and MCP: TokenReview for the kpromo audience only.
    expect(c.auth).toEqual({ tokenReview: true, tokenAudiences: ['kpromo'], anonymousMetrics: false });
    expect(c.server.host).toBe('127.0.0.1');
    const e = loadConfig({ env: { KPROMO_MCP_ENABLED: 'true', KPROMO_MCP_WRITE: '1', KPROMO_MCP_PORT: '9000' } });
    expect(e.mcp).toMatchObject({ enabled: true, write: true, port: 9000 });
  });
  it('rejects unknown keys and bad values with the path', () => {
    expect(() => McpConfigSchema.parse({ writable: true })).toThrow(/writable/);
    expect(() => loadConfig({ env: {}, flags: { mcp: { path: 'mcp' } } })).toThrow(/mcp\.path/);
    // "Any token" is never accepted: an empty audience list is a configuration error.
    expect(() => loadConfig({ env: {}, flags: { auth: { tokenAudiences: [] } } })).toThrow(
      /auth\.tokenAudiences.*never any token/,
    );
  });
});

describe('static tokens', () => {
  it('authenticates known tokens in constant time and rejects others without TokenReview', async () => {
    const f = file('ok.yaml', 'tokens:\n  - token: abcdefghijklmnop1234\n    username: alice\n    groups: [ops]\n');
    const a = new Authenticator({ staticTokens: loadStaticTokens(f), tokenReview: false });
    await expect(a.authenticate('abcdefghijklmnop1234')).resolves.toMatchObject({
      username: 'alice',
      groups: ['ops'],
      source: 'static',
    });
    await expect(a.authenticate('abcdefghijklmnop1235')).rejects.toBeInstanceOf(AuthError);
  });
  it('reports a bad tokens file clearly', () => {
    expect(() => loadStaticTokens(file('short.yaml', 'tokens:\n  - token: short\n    username: bob\n'))).toThrow(
      /tokens\.0\.token: static tokens must be at least 16 characters/,
    );
    expect(() => loadStaticTokens('/nonexistent/tokens.yaml')).toThrow(/static tokens file \/nonexistent/);
  });
});

describe('redaction', () => {
  it('masks secret-looking keys, keeps the rest verbatim', () => {
    expect(
      redactMap({
        'kpromo.dev/api-token': 'x',
        'vault.io/secret-path': 'y',
        password: 'z',
        'app.kubernetes.io/name': 'n',
      }),
    ).toEqual({
      'kpromo.dev/api-token': REDACTED,
      'vault.io/secret-path': REDACTED,
      password: REDACTED,
      'app.kubernetes.io/name': 'n',
    });
    expect(redactDeep({ a: [{ clientSecret: 's', b: 1 }], authorization: 'Bearer t' })).toEqual({
      a: [{ clientSecret: REDACTED, b: 1 }],
      authorization: REDACTED,
    });
    expect(clip('x'.repeat(2000))?.length).toBe(1025);
  });
});

describe('mcp oauth discovery config (RFC 9728)', () => {
  it('is off by default and takes authorization servers from config or env', () => {
    expect(loadConfig({ env: {} }).mcp.oauth).toEqual({ authorizationServers: [], resourceName: 'kpromo' });
    const c = loadConfig({
      env: {
        KPROMO_MCP_AUTHORIZATION_SERVERS: 'https://issuer.example.com, https://login.example.org/realms/x',
        KPROMO_MCP_RESOURCE_URL: 'https://kpromo.example.com/mcp',
      },
    });
    expect(c.mcp.oauth.authorizationServers).toEqual([
      'https://issuer.example.com',
      'https://login.example.org/realms/x',
    ]);
    expect(() => McpConfigSchema.parse({ oauth: { authorizationServers: ['not a url'] } })).toThrow(
      /authorizationServers/,
    );
    expect(() => McpConfigSchema.parse({ oauth: { tokenType: 'jwt' } })).toThrow(/tokenType/);
  });
  it('serves the document at the path-aware and the root location, naming the resource', () => {
    const cfg = McpConfigSchema.parse({
      port: 8090,
      oauth: {
        authorizationServers: ['https://issuer.example.com'],
        resource: 'https://kpromo.example.com/agents/mcp',
      },
    });
    expect(metadataPaths(cfg)).toEqual([
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource/agents/mcp',
    ]);
    expect(challengeSuffix(cfg, 'ignored:1')).toBe(
      ', resource_metadata="https://kpromo.example.com/.well-known/oauth-protected-resource/agents/mcp"',
    );
    expect(protectedResourceMetadata(cfg, 'ignored:1')).toEqual({
      resource: 'https://kpromo.example.com/agents/mcp',
      authorization_servers: ['https://issuer.example.com'],
      bearer_methods_supported: ['header'],
      resource_name: 'kpromo',
    });
    const local = McpConfigSchema.parse({ oauth: { authorizationServers: ['https://i.example'] } });
    expect(protectedResourceMetadata(local, '127.0.0.1:8090').resource).toBe('http://127.0.0.1:8090/mcp');
  });
});

describe('mcp resource URIs', () => {
  it('parses plan and application URIs, nothing else', () => {
    expect(parseUri('promotion://plans/team-a/web-1.2')).toEqual({
      kind: 'plans',
      namespace: 'team-a',
      name: 'web-1.2',
      resource: 'promotionplans',
    });
    expect(parseUri('promotion://applications/ns/cart')?.resource).toBe('applications');
    for (const bad of [
      'test://static-text',
      'promotion://plans/ns',
      'promotion://plans/NS/x',
      'promotion://secrets/a/b',
    ])
      expect(parseUri(bad)).toBeUndefined();
  });
});

describe('mcp text summaries', () => {
  const plan = (status: Record<string, unknown>, spec: Record<string, unknown> = {}) =>
    ({
      metadata: { name: 'p1', namespace: 'ns', generation: 1 },
      spec: {
        flow: 'main',
        from: 'dev',
        to: 'stable',
        candidates: [{ application: 'cart', from: { tag: 'v2', digest: `sha256:${'a'.repeat(64)}` } }],
        ...spec,
      },
      status,
    }) as never;
  it('shortens digests and ages, and lists versions in the given (pipeline) order', () => {
    expect(shortDigest(`sha256:${'0123456789ab'.repeat(5)}cdef`)).toBe('sha256:0123456789ab');
    expect(shortDigest('v1')).toBe('v1');
    expect([age(5), age(300), age(7200), age(3 * 86_400)]).toEqual(['5s', '5m', '2h', '3d']);
    expect(
      appLine({
        namespace: 'ns',
        name: 'cart',
        owner: 'team-a',
        type: 'service',
        repository: 'r/cart',
        labels: {},
        versions: [
          { environment: 'dev', tag: 'v2', digest: `sha256:${'b'.repeat(64)}`, health: 'Healthy', ageSeconds: 120 },
          { environment: 'prod', health: 'Missing' },
        ],
      }),
    ).toBe(`cart [service, team-a]: dev v2 (sha256:${'b'.repeat(12)}, 2m, Healthy) → prod nothing running (Missing)`);
  });
  it('a rolled-back plan does not read as a success; a waiting plan says what it waits for', () => {
    expect(planOutcome(plan({ phase: 'Complete' }))).toBe('succeeded');
    expect(planOutcome(plan({ phase: 'RolledBack' }))).toBe('rolled-back');
    expect(planLine(planOut(plan({ phase: 'RolledBack', succeeded: 1, failed: 0 })))).toBe(
      'promote plan ns/p1 dev → stable, 1 candidate(s): rolled back: the versions it delivered were replaced (1 succeeded, 0 failed)',
    );
    expect(
      planLine(planOut(plan({ phase: 'RolledBack' }, { action: 'rollback', rollbackOf: 'p0', candidates: [] }))),
    ).toBe('rollback plan ns/p1 dev → stable: rollback of p0 complete: previous versions restored');
    const waiting = plan({ phase: 'Pending', gate: { approved: false, required: 2, waitingFor: '1 more approval' } });
    expect(planOutcome(waiting)).toBe('awaiting-approval');
    expect(planLine(planOut(waiting))).toMatch(/: waiting for approval: 1 more approval$/);
    // Org-level gates: the effective count and the rules, and a plan held by one names it.
    const orgRule = {
      orgPolicy: 'kpromo-system/platform',
      rule: 'prod-gates',
      field: 'spec.rules[0].requireVerification',
      requires: 'at least one verification check',
      flowHas: 'stages[1].verification: 0 checks',
      stricter: true,
      unmet: true,
    };
    const held = planOut(plan({ phase: 'Pending', gate: { approved: true, required: 2, orgRules: [orgRule] } }));
    expect(PlanOut.parse(held)).toEqual(held);
    expect(held).toMatchObject({ requiredApprovals: 2, orgRules: [orgRule] });
    expect(planLine(held)).toMatch(
      /: held by OrgPolicy kpromo-system\/platform rule prod-gates \(spec\.rules\[0\]\.requireVerification\): at least one verification check; the flow has stages\[1\]\.verification: 0 checks — the plan waits until the flow meets it$/,
    );
    expect(planOutcome(plan({ gate: { approved: true, required: 1, frozen: { window: 'weekend' } } }))).toBe('frozen');
    expect(
      planOutcome(
        plan({ gate: { approved: true, required: 1, eligibleAt: new Date(Date.now() + 60_000).toISOString() } }),
      ),
    ).toBe('soaking');
    // Why the soak is longer than it was: the alert that restarted it, and when.
    const eligibleAt = new Date(Date.now() + 60_000).toISOString();
    const restarted = planOut(
      plan({
        phase: 'Pending',
        gate: { approved: true, required: 1, eligibleAt },
        soakResets: [
          {
            at: '2026-12-02T10:00:00Z',
            environment: 'dev',
            alert: 'WebErrors',
            fingerprint: 'f1',
            reason: 'alert WebErrors{app="web"}',
            by: 'alertmanager',
          },
        ],
      }),
    );
    expect(restarted.soakResets).toEqual([
      { at: '2026-12-02T10:00:00Z', environment: 'dev', alert: 'WebErrors', reason: 'alert WebErrors{app="web"}' },
    ]);
    expect(planLine(restarted)).toBe(
      `promote plan ns/p1 dev → stable, 1 candidate(s): soaking until ${eligibleAt} (soak restarted at 2026-12-02T10:00:00Z: alert WebErrors{app="web"})`,
    );
  });
  it('the order of a release: each app says what it waits for and the failed app that held it; apps their dependsOn', () => {
    const v = planOut(
      plan({
        phase: 'Incomplete',
        apps: [
          { application: 'db', phase: 'Failed', reason: 'ImageNotFound' },
          { application: 'cart', phase: 'Failed', reason: 'DependencyFailed', heldBy: 'db' },
          { application: 'web', phase: 'Pending', reason: 'WaitingForDependency', waitsFor: ['cart'] },
        ],
      }),
    );
    // What the state tool declares as its output accepts it.
    expect(PlanOut.parse(v)).toEqual(v);
    expect(v.apps.map((a) => [a.application, a.waitsFor, a.heldBy])).toEqual([
      ['db', undefined, undefined],
      ['cart', undefined, 'db'],
      ['web', ['cart'], undefined],
    ]);
    expect(planDetail(v).split('\n').slice(1)).toEqual([
      '  db: Failed (ImageNotFound)',
      '  cart: Failed (DependencyFailed); held: dependency db failed',
      '  web: Pending (WaitingForDependency); waits for cart',
    ]);
    expect(
      appLine({
        namespace: 'ns',
        name: 'web',
        owner: 'team-a',
        type: 'service',
        repository: 'r/web',
        labels: {},
        versions: [{ environment: 'prod', health: 'Missing' }],
        dependsOn: ['cart', 'db'],
      }),
    ).toBe('web [service, team-a]: prod nothing running (Missing); after cart, db');
  });
  it('state carries the pull request: link, state, which reviews count and why not, the merge; its text clipped', () => {
    const C = 'c'.repeat(40);
    const v = planOut(
      plan({
        phase: 'Promoting',
        apps: [{ application: 'cart', phase: 'RollingOut' }],
        gate: { approved: true, required: 1, approvers: [{ user: 'gitea:carol', person: 'carol', counted: true }] },
        pullRequest: {
          forge: 'gitea',
          repository: 'platform/gitops',
          branch: 'kpromo/p1',
          base: 'main',
          commit: C,
          number: 3,
          url: 'https://gitea.example.com/platform/gitops/pulls/3',
          state: 'merged',
          reviews: [
            { login: 'carol', user: 'gitea:carol', state: 'APPROVED', commit: C, eligible: true },
            { login: 'bob', user: 'gitea:bob', state: 'APPROVED', commit: C, eligible: false, why: 'x'.repeat(2000) },
          ],
          merged: { by: 'carol', commit: 'f'.repeat(40) },
          message: 'approved',
        },
      }),
    );
    // What the state tool declares as its output accepts it.
    expect(PlanOut.parse(v)).toEqual(v);
    expect(v.pullRequest).toMatchObject({
      url: 'https://gitea.example.com/platform/gitops/pulls/3',
      number: 3,
      state: 'merged',
      merged: { by: 'carol', commit: 'f'.repeat(40) },
      reviews: [
        { login: 'carol', counts: true },
        { login: 'bob', counts: false, why: `${'x'.repeat(1024)}…` },
      ],
    });
    expect(planDetail(v).split('\n').slice(2)).toEqual([
      `  pull request: #3 merged https://gitea.example.com/platform/gitops/pulls/3 (kpromo/p1 into main), merged by carol as ${'f'.repeat(12)}, 1 of 2 review(s) count`,
      '    carol (gitea:carol) APPROVED: counts',
      `    bob (gitea:bob) APPROVED: does not count: ${'x'.repeat(1024)}…`,
      '    approved',
    ]);
  });

  it("state shows each app's step in the release's order while the plan awaits approval, then with its progress", () => {
    const d = `sha256:${'a'.repeat(64)}`;
    const spec = {
      candidates: ['web', 'api', 'db'].map((application) => ({ application, from: { tag: 'v2', digest: d } })),
    };
    const order = [
      { application: 'web', after: ['api'] },
      { application: 'api', after: ['db'] },
    ];
    const awaiting = planOut(plan({ phase: 'Pending', gate: { approved: false, required: 1 }, order }, spec));
    expect(PlanOut.parse(awaiting)).toEqual(awaiting);
    expect(awaiting.candidates.map((c) => [c.application, c.step, c.after])).toEqual([
      ['web', 3, ['api']],
      ['api', 2, ['db']],
      ['db', 1, undefined],
    ]);
    expect(planDetail(awaiting).split('\n').slice(1)).toEqual([
      '  web: v2 sha256:aaaaaaaaaaaa (not started); step 3, after api',
      '  api: v2 sha256:aaaaaaaaaaaa (not started); step 2, after db',
      '  db: v2 sha256:aaaaaaaaaaaa (not started); step 1',
    ]);
    const running = planOut(
      plan(
        {
          phase: 'Promoting',
          order,
          apps: [
            { application: 'db', phase: 'RollingOut' },
            { application: 'api', phase: 'Pending', reason: 'WaitingForDependency', waitsFor: ['db'] },
          ],
        },
        spec,
      ),
    );
    expect(planDetail(running).split('\n').slice(1)).toEqual([
      '  db: RollingOut; step 1',
      '  api: Pending (WaitingForDependency); step 2, after db; waits for db',
    ]);
    // A plan that declares no order says nothing of steps.
    expect(planOut(plan({ phase: 'Pending' }, spec)).candidates.map((c) => c.step)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });
  it("state shows a job check with the other checks: its Job, verdict, how long it ran and its log's tail", () => {
    const v = planOut(
      plan({
        phase: 'Complete',
        apps: [
          {
            application: 'cart',
            phase: 'Succeeded',
            reason: 'Verified',
            verification: {
              verdict: 'Passed',
              startedAt: '2026-12-02T10:00:00Z',
              endsAt: '2026-12-02T10:05:00Z',
              checks: [
                {
                  name: 'e2e',
                  kind: 'job',
                  query: 'Job shop/kpromo-cart-e2e-0123456789',
                  condition: 'Job completes',
                  verdict: 'Passed',
                  samples: [{ at: '2026-12-02T10:01:00Z', ok: true }],
                  durationSeconds: 42,
                  output: '12 passed',
                  message: 'Job kpromo-cart-e2e-0123456789 succeeded in 42s',
                },
              ],
            },
          },
        ],
      }),
    );
    expect(PlanOut.parse(v)).toEqual(v);
    expect(v.apps[0]!.verification!.checks).toEqual([
      {
        name: 'e2e',
        kind: 'job',
        query: 'Job shop/kpromo-cart-e2e-0123456789',
        condition: 'Job completes',
        verdict: 'Passed',
        values: [null],
        message: 'Job kpromo-cart-e2e-0123456789 succeeded in 42s',
        durationSeconds: 42,
        output: '12 passed',
      },
    ]);
  });
  it('a fleet plan reports each wave and the current one; a plan without waves reads as before', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const fleet = fleetPlan({ name: 'p1', namespace: 'ns', from: 'dev', to: 'stable', tag: 'v2' });
    const v = planOut(fleet);
    expect(v.waves).toEqual([
      { name: 'canary', phase: 'Succeeded', clusters: ['prod-eu-1'], succeeded: 1, failed: 0, budget: 0 },
      {
        name: 'eu',
        phase: 'Waiting',
        clusters: ['prod-eu-2', 'prod-eu-3'],
        succeeded: 0,
        failed: 0,
        budget: 0,
        message: 'waiting for someone with the RBAC verb continue to let it start: kpromo plan continue p1 --wave eu',
      },
      { name: 'rest', phase: 'Pending', clusters: ['prod-us-1'], succeeded: 0, failed: 0, budget: 1 },
    ]);
    expect(v.currentWave).toBe('eu');
    // What the state tool declares as its output accepts it.
    expect(PlanOut.parse(v)).toEqual(v);
    expect(planDetail(v).split('\n')).toEqual([
      'promote plan ns/p1 dev → stable, 1 candidate(s): promoting (0 succeeded, 0 failed)',
      '  wave canary: Succeeded, 1/1 cluster(s) succeeded [prod-eu-1]',
      '  wave eu (current): Waiting, 0/2 cluster(s) succeeded [prod-eu-2, prod-eu-3]: waiting for someone with the RBAC verb continue to let it start: kpromo plan continue p1 --wave eu',
      '  wave rest: Pending, 0/1 cluster(s) succeeded [prod-us-1]',
      `  cart: RollingOut v2 sha256:${'a'.repeat(12)}`,
    ]);

    // A failed wave halts the rest: no wave is current any more.
    const failed = planOut(
      plan({
        phase: 'Failed',
        waves: [
          {
            name: 'canary',
            clusters: ['prod-eu-1'],
            phase: 'Failed',
            succeeded: 0,
            failed: 1,
            message: '1 of 1 failed',
          },
          { name: 'rest', clusters: Array.from({ length: 12 }, (_, i) => `c${i}`), phase: 'Halted' },
        ],
      }),
    );
    expect(failed.currentWave).toBeUndefined();
    expect(planDetail(failed).split('\n').slice(1, 3)).toEqual([
      '  wave canary: Failed, 0/1 cluster(s) succeeded, 1 failed [prod-eu-1]: 1 of 1 failed',
      '  wave rest: Halted, 0/12 cluster(s) succeeded [c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, … and 2 more]',
    ]);

    // A plan into a one-cluster Environment: no wave fields, the same text as before.
    const single = planOut(
      plan({ phase: 'Promoting', apps: [{ application: 'cart', phase: 'RollingOut', targetTag: 'v2', digest }] }),
    );
    expect(single).not.toHaveProperty('waves');
    expect(single).not.toHaveProperty('currentWave');
    expect(planDetail(single)).toBe(
      `promote plan ns/p1 dev → stable, 1 candidate(s): promoting\n  cart: RollingOut v2 sha256:${'a'.repeat(12)}`,
    );
  });
});

describe('mcp session event store (resumable SSE)', () => {
  it('replays what followed an event on the same stream, skipping priming events, within a byte budget', async () => {
    const s = new SessionEventStore(400);
    const msg = (id: number) => ({ jsonrpc: '2.0' as const, method: 'notifications/progress', params: { n: id } });
    const prime = await s.storeEvent('a', {} as never);
    const a1 = await s.storeEvent('a', msg(1));
    await s.storeEvent('b', msg(2));
    await s.storeEvent('a', msg(3));
    const sent: unknown[] = [];
    expect(await s.replayEventsAfter(prime, { send: async (_id, m) => void sent.push(m) })).toBe('a');
    expect(sent).toEqual([msg(1), msg(3)]);
    expect(await s.getStreamIdForEventId(a1)).toBe('a');
    for (let i = 0; i < 20; i++) await s.storeEvent('a', msg(100 + i));
    // The oldest events went to keep the store within its budget: replay from them is impossible.
    expect(await s.replayEventsAfter(prime, { send: async () => undefined })).toBe('');
  });
});

describe('diff and plan tool text', () => {
  it('lists the first 50 candidates and counts the skipped apps by reason (the structured content has all)', () => {
    const cands = Array.from({ length: 60 }, (_, i) => ({
      application: `app-${i}`,
      from: { tag: 'v2', digest: `sha256:${'a'.repeat(64)}` },
    }));
    const text = candidateLines('dev', 'qa', cands, {
      skipped: [{ application: 'x', reason: 'SourceNotHealthy', message: 'dev is Degraded' }],
      skippedTotal: 4001,
      skippedByReason: { SourceNotHealthy: 1, UpToDate: 4000 },
    });
    const lines = text.split('\n');
    expect(lines[0]).toBe('60 application(s) would change from dev to qa:');
    expect(lines.filter((l) => l.startsWith('  app-'))).toHaveLength(50);
    expect(lines).toContain('  … and 10 more (every candidate is in the structured content)');
    expect(lines.at(-1)).toBe('4001 skipped (1 SourceNotHealthy, 4000 UpToDate): x (SourceNotHealthy), and 4000 more');
  });
});

describe('mcp tool rows and the contract', () => {
  it('every tool but list and state takes the request of an HTTP operation', () => {
    expect(TOOLS.filter((t) => !t.contract).map((t) => t.name)).toEqual(['list', 'state']);
  });
  it("a tool's arguments are the contract request's fields, but for the differences its row declares", () => {
    for (const t of TOOLS) {
      if (!t.contract) continue;
      const mine = Object.keys(t.input.shape);
      const theirs = Object.keys(t.contract.schema.shape);
      expect({
        tool: t.name,
        mcpOnly: mine.filter((k) => !theirs.includes(k)).sort(),
        notOffered: theirs.filter((k) => !mine.includes(k)).sort(),
      }).toEqual({
        tool: t.name,
        mcpOnly: [...(t.contract.mcpOnly ?? [])].sort(),
        notOffered: [...(t.contract.notOffered ?? [])].sort(),
      });
    }
  });
  it('accepts no field longer or larger than the HTTP API does', () => {
    const props = (s: z.ZodType) =>
      (z.toJSONSchema(s, { io: 'input' }).properties ?? {}) as Record<string, Record<string, unknown>>;
    const compared: string[] = [];
    const over: string[] = [];
    for (const t of TOOLS) {
      if (!t.contract) continue;
      const mine = props(t.input);
      for (const [field, theirs] of Object.entries(props(t.contract.schema)))
        for (const limit of ['maxLength', 'maximum', 'maxItems']) {
          const max = theirs[limit];
          if (typeof max !== 'number' || !mine[field]) continue;
          compared.push(`${t.name}.${field}`);
          const m = mine[field][limit];
          if (typeof m !== 'number' || m > max) over.push(`${t.name}.${field}: ${limit} ${m} (HTTP API: ${max})`);
        }
    }
    expect(over).toEqual([]);
    expect(compared).toEqual(expect.arrayContaining(['diff.applications', 'stop_line.reason', 'history.limit']));
  });
});
