import {
  API_VERSION,
  OVERRIDE_REASON_REQUIRED,
  OVERRIDE_REASON_TOO_SHORT,
  OVERRIDE_REASON_WITHOUT_OVERRIDE,
  type PromotionPlan,
} from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import {
  ApplicationsQuery,
  ApproveBody,
  BACKEND_API,
  CONTROLLER_API,
  ContinueBody,
  CreatePlanBody,
  checkInput,
  DiffQuery,
  EXPECT_REQUIRED,
  MAX_RESOURCE_SPEC_BYTES,
  openApiDocument,
  planProgress,
  ResourceActionBody,
  UID_REQUIRED,
} from '../src/index.js';
import { responseChecker } from '../src/testing.js';

const D = `sha256:${'a'.repeat(64)}`;

describe('request schemas (one for every door)', () => {
  it('parses an equality label selector and a page size', () => {
    const r = checkInput(
      ApplicationsQuery,
      { labelSelector: 'tier=web, app.kubernetes.io/part-of=shop', limit: '50' },
      'query',
    );
    expect(r).toEqual({
      ok: true,
      value: { labelSelector: { tier: 'web', 'app.kubernetes.io/part-of': 'shop' }, limit: 50 },
    });
  });

  it('refuses set-based selectors, a page size over 1000 and a zero page size, naming each field', () => {
    expect(checkInput(ApplicationsQuery, { labelSelector: 'tier in (web)' }, 'query')).toMatchObject({
      ok: false,
      message: expect.stringContaining('labelSelector: "tier in (web)" is not key=value'),
    });
    const r = checkInput(ApplicationsQuery, { limit: '1001' }, 'query');
    expect(r).toMatchObject({ ok: false, message: 'invalid query: limit: must be at most 1000' });
    expect(checkInput(ApplicationsQuery, { limit: '0' }, 'query')).toMatchObject({ ok: false });
  });

  it('refuses the same stage as from and to, and a backreference (not RE2) as tagPattern', () => {
    expect(checkInput(DiffQuery, { from: 'dev', to: 'dev' }, 'query')).toMatchObject({
      ok: false,
      message: 'invalid query: to: from and to must be different environments',
    });
    const r = checkInput(DiffQuery, { from: 'dev', to: 'stable', tagPattern: '(a)\\1' }, 'query');
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(/^invalid query: tagPattern: invalid regular expression \(RE2 syntax\)/);
  });

  it('takes skippedLimit as a whole number from 0 to 10,000 and refuses anything else, naming it', () => {
    const q = (skippedLimit: unknown) => checkInput(DiffQuery, { from: 'dev', to: 'stable', skippedLimit }, 'query');
    expect(q('0')).toMatchObject({ ok: true, value: { skippedLimit: 0 } });
    expect(q('10000')).toMatchObject({ ok: true, value: { skippedLimit: 10_000 } });
    for (const bad of ['-1', '10001', '1.5', 'all', '1e9'])
      expect(q(bad)).toMatchObject({ ok: false, message: expect.stringMatching(/^invalid query: skippedLimit: /) });
    const body = checkInput(CreatePlanBody, { from: 'dev', to: 'stable', skippedLimit: 99_999 }, 'request body');
    expect(body).toMatchObject({ ok: false, message: expect.stringMatching(/skippedLimit: must be at most 10000/) });
  });

  it('drops identity fields from a body: the approver is never taken from the request', () => {
    const r = checkInput(ApproveBody, { approvedBy: 'mallory', comment: 'ok', uid: 'ab-12' }, 'request body');
    expect(r).toEqual({ ok: true, value: { comment: 'ok', uid: 'ab-12' } });
    const c = checkInput(CreatePlanBody, { from: 'dev', to: 'stable', requestedBy: 'mallory' }, 'request body');
    expect(c.ok && 'requestedBy' in c.value).toBe(false);
  });

  it('a continuation body: an optional wave name, comment and uid; the user is never taken from the request', () => {
    expect(checkInput(ContinueBody, undefined, 'request body')).toEqual({ ok: true, value: {} });
    expect(
      checkInput(
        ContinueBody,
        { wave: 'eu-west', comment: 'canary ok', user: 'mallory', uid: 'ab-12' },
        'request body',
      ),
    ).toEqual({ ok: true, value: { wave: 'eu-west', comment: 'canary ok', uid: 'ab-12' } });
    expect(checkInput(ContinueBody, { wave: '' }, 'request body')).toEqual({ ok: true, value: {} });
    expect(checkInput(ContinueBody, { wave: 'EU West', uid: 'x y' }, 'request body')).toEqual({
      ok: false,
      message:
        'invalid request body: wave: must be a wave name (a DNS label: lower-case letters, digits and "-", at most 63); uid: must be the plan metadata.uid you reviewed (hex digits and dashes)',
    });
    expect(checkInput(ContinueBody, { wave: 'w'.repeat(64) }, 'request body').ok).toBe(false);
  });

  it('a resource action names a custom resource only; spec is a bounded object and metadata never comes from the body', () => {
    const ok = {
      operation: 'update',
      group: 'example.com',
      version: 'v1beta1',
      plural: 'widgets',
      namespace: 'shop',
      name: 'w.1',
      spec: { size: 3 },
      metadata: { labels: { evil: 'x' } },
      kind: 'ClusterRole',
    };
    expect(checkInput(ResourceActionBody, ok, 'request body')).toEqual({
      ok: true,
      value: {
        operation: 'update',
        group: 'example.com',
        version: 'v1beta1',
        plural: 'widgets',
        namespace: 'shop',
        name: 'w.1',
        spec: { size: 3 },
      },
    });
    const bad = (o: Record<string, unknown>) => checkInput(ResourceActionBody, { ...ok, ...o }, 'request body');
    expect(bad({ group: undefined })).toMatchObject({
      ok: false,
      message: expect.stringContaining('group: is required'),
    });
    expect(bad({ group: 'apps' })).toMatchObject({
      ok: false,
      message: expect.stringContaining('custom resources only'),
    });
    expect(bad({ version: 'v1/../..' })).toMatchObject({ ok: false });
    expect(bad({ plural: 'widgets/status' })).toMatchObject({ ok: false });
    expect(bad({ namespace: 'a'.repeat(64) })).toMatchObject({ ok: false });
    expect(bad({ operation: 'apply' })).toMatchObject({
      ok: false,
      message: expect.stringContaining('create, update or delete'),
    });
    expect(bad({ spec: [1] })).toMatchObject({
      ok: false,
      message: expect.stringContaining('spec: must be a JSON object'),
    });
    expect(bad({ spec: { blob: 'x'.repeat(MAX_RESOURCE_SPEC_BYTES) } })).toMatchObject({
      ok: false,
      message: expect.stringContaining(`at most ${MAX_RESOURCE_SPEC_BYTES} bytes`),
    });
  });

  it('an approval names the plan reviewed: without uid (absent, null or empty) it is refused, saying where to read it', () => {
    for (const body of [{}, { uid: null }, { uid: '' }, { comment: 'ok' }])
      expect(checkInput(ApproveBody, body, 'request body')).toEqual({
        ok: false,
        message: `invalid request body: uid: ${UID_REQUIRED}`,
      });
    expect(UID_REQUIRED).toMatch(/metadata\.uid of the plan you reviewed \(GET \/plans\/\{namespace\}\/\{name\}/);
  });

  it('an override carries overrideReason, at least a sentence; a reason comes only with the override', () => {
    const approve = (b: object) => checkInput(ApproveBody, { uid: 'ab-12', ...b }, 'request body');
    expect(approve({ overrideFreeze: true })).toEqual({
      ok: false,
      message: `invalid request body: overrideReason: ${OVERRIDE_REASON_REQUIRED}`,
    });
    expect(approve({ overrideFreeze: true, overrideReason: 'hotfix' })).toEqual({
      ok: false,
      message: `invalid request body: overrideReason: ${OVERRIDE_REASON_TOO_SHORT}`,
    });
    expect(approve({ overrideReason: 'payments down, hotfix v1.1.1' })).toEqual({
      ok: false,
      message: `invalid request body: overrideReason: ${OVERRIDE_REASON_WITHOUT_OVERRIDE}`,
    });
    expect(approve({ overrideFreeze: true, overrideReason: 'x '.repeat(513) })).toMatchObject({
      ok: false,
      message: 'invalid request body: overrideReason: must be at most 1024 characters',
    });
    expect(approve({ overrideFreeze: true, overrideReason: 'payments down, hotfix v1.1.1' })).toEqual({
      ok: true,
      value: { overrideFreeze: true, overrideReason: 'payments down, hotfix v1.1.1', uid: 'ab-12' },
    });
  });

  it('a create-and-approve names the digests reviewed: expect is required with approve, digests by application', () => {
    const body = { from: 'dev', to: 'stable', approve: true };
    expect(checkInput(CreatePlanBody, body, 'request body')).toEqual({
      ok: false,
      message: `invalid request body: expect: ${EXPECT_REQUIRED}`,
    });
    const digest = `sha256:${'a'.repeat(64)}`;
    expect(checkInput(CreatePlanBody, { ...body, expect: { web: digest } }, 'request body')).toMatchObject({
      ok: true,
      value: { approve: true, expect: { web: digest } },
    });
    expect(checkInput(CreatePlanBody, { ...body, expect: { web: 'v1.2.0' } }, 'request body')).toMatchObject({
      ok: false,
      message: 'invalid request body: expect.web: digests must be sha256:<64 hex digits>',
    });
    expect(checkInput(CreatePlanBody, { ...body, expect: ['web'] }, 'request body')).toMatchObject({ ok: false });
    // Without approve, expect is optional (and checked by the controller when given).
    expect(checkInput(CreatePlanBody, { from: 'dev', to: 'stable' }, 'request body')).toMatchObject({ ok: true });
  });

  it('refuses a body that is not an object', () => {
    expect(checkInput(ApproveBody, [1], 'request body')).toEqual({
      ok: false,
      message: 'invalid request body: must be a JSON object',
    });
  });
});

const plan: PromotionPlan = {
  apiVersion: API_VERSION,
  kind: 'PromotionPlan',
  metadata: { name: 'p1', namespace: 'shop' },
  spec: {
    flow: 'main',
    from: 'dev',
    to: 'stable',
    candidates: [{ application: 'web', from: { tag: 'v1', digest: D } }],
  },
  status: { phase: 'Promoting', apps: [{ application: 'web', phase: 'Copying' }] },
};

describe('OpenAPI documents generated from the route table', () => {
  it('documents every controller route with its success status and the error body', () => {
    const doc = openApiDocument(CONTROLLER_API) as { paths: Record<string, Record<string, { responses: object }>> };
    const ops = Object.entries(doc.paths).flatMap(([p, ms]) => Object.keys(ms).map((m) => `${m.toUpperCase()} ${p}`));
    expect(ops.sort()).toEqual(
      [
        'GET /applications',
        'GET /diff',
        'GET /environments',
        'GET /flows',
        'GET /history',
        'GET /insights/dora',
        'GET /linestops',
        'POST /adopt',
        'POST /alertmanager',
        'POST /linestops',
        'POST /linestops/{namespace}/{name}/lift',
        'GET /plans',
        'GET /plans/{namespace}/{name}',
        'POST /plans',
        'POST /plans/{namespace}/{name}/approve',
        'POST /plans/{namespace}/{name}/continue',
        'POST /plans/{namespace}/{name}/rollback',
        'POST /resources',
      ].sort(),
    );
    expect(Object.keys(doc.paths['/plans'].post.responses)).toEqual(['201', '400', '401', '403', '409', '503']);
    // Resource actions reach the controller through the backend's signed Port webhook only.
    const backend = openApiDocument(BACKEND_API) as { paths: Record<string, unknown> };
    expect(Object.keys(backend.paths)).not.toContain('/resources');
    // The portal stops and lifts the line as the signed-in user; Alertmanager calls the controller itself.
    expect(Object.keys(backend.paths).filter((p) => p.startsWith('/linestops') || p === '/alertmanager')).toEqual([
      '/linestops',
      '/linestops/{namespace}/{name}/lift',
    ]);
  });

  it('its schemas accept a well-formed answer and name what is wrong with a malformed one', () => {
    const check = responseChecker(CONTROLLER_API);
    expect(check('GET', '/plans/{namespace}/{name}', 200, plan)).toEqual([]);
    const bad = { ...plan, status: { phase: 'Finished' } };
    expect(check('GET', '/plans/{namespace}/{name}', 200, bad).join('\n')).toMatch(
      /\/status\/phase must be equal to one of/,
    );
    expect(check('GET', '/applications', 200, { items: [{ namespace: 'shop', name: 'web' }] }).join('\n')).toMatch(
      /must have required property 'owner'/,
    );
    expect(check('GET', '/applications', 418, {})).toEqual([
      'GET /applications does not document status 418 in "kpromo controller API"',
    ]);
  });

  it('describes the backend answers with the plan progress the portal shows', () => {
    const check = responseChecker(BACKEND_API);
    expect(check('GET', '/plans/{namespace}/{name}', 200, { plan, progress: planProgress(plan) })).toEqual([]);
    expect(check('GET', '/plans/{namespace}/{name}', 200, plan).join('\n')).toMatch(/required property 'progress'/);
  });
});

describe('planProgress', () => {
  it('lists every candidate, Waiting until the controller reports it, and is not done while Promoting', () => {
    const two = {
      ...plan,
      spec: {
        ...plan.spec,
        candidates: [...plan.spec.candidates, { application: 'api', from: { tag: 'v2', digest: D } }],
      },
    };
    const p = planProgress(two);
    expect(p.apps.map((a) => [a.application, a.phase])).toEqual([
      ['web', 'Copying'],
      ['api', 'Waiting'],
    ]);
    expect([p.done, p.total, p.approved]).toEqual([false, 2, false]);
    expect(planProgress({ ...plan, status: { phase: 'RolledBack' } }).done).toBe(true);
  });
});
