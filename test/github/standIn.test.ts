import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GitHubStandIn, sha } from './standIn.js';

// The stand-in's own guarantees, with raw requests (no adapter): what it must refuse and record.
let gh: GitHubStandIn;
const auth = { authorization: 'Bearer kpromo-token', 'x-github-api-version': '2022-11-28' };
const call = (method: string, path: string, body?: unknown) =>
  fetch(`${gh.url}${path}`, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

beforeEach(async () => {
  gh = new GitHubStandIn();
  await gh.start();
  gh.addRepo('acme', 'env', { branches: { main: sha('main'), 'kpromo/prod': sha('c1') } });
});

afterEach(async () => {
  await gh.stop();
});

describe('GitHub stand-in', () => {
  it('answers a documented request with a body that matches the description, and records nothing', async () => {
    const res = await call('POST', '/repos/acme/env/pulls', { head: 'kpromo/prod', base: 'main', title: 't' });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { head: { sha: string } }).head.sha).toBe(sha('c1'));
    expect(gh.violations).toEqual([]);
  });

  it('refuses (404) and records a request for an operation GitHub does not describe', async () => {
    expect((await call('POST', '/repos/acme/env/pulls/1/approve', {})).status).toBe(404);
    expect((await call('DELETE', '/repos/acme/env/pulls/1')).status).toBe(404);
    expect(gh.violations).toEqual([
      "request POST /repos/acme/env/pulls/1/approve matches no operation in GitHub's description",
      "request DELETE /repos/acme/env/pulls/1 matches no operation in GitHub's description",
    ]);
  });

  it('refuses and records parameters and bodies the description does not allow', async () => {
    expect((await call('GET', '/repos/acme/env/pulls?state=merged')).status).toBe(422);
    expect((await call('GET', '/repos/acme/env/pulls/one')).status).toBe(422);
    expect((await call('GET', '/repos/acme/env/pulls?perPage=100')).status).toBe(422);
    expect((await call('POST', `/repos/acme/env/statuses/${sha('c1')}`, { state: 'ok' })).status).toBe(422);
    expect(gh.violations.join('\n')).toMatch(/query parameter state .*must be equal to one of the allowed values/);
    expect(gh.violations.join('\n')).toMatch(/path parameter pull_number .*must be integer/);
    expect(gh.violations.join('\n')).toMatch(/query parameter perPage is not in the description/);
    expect(gh.violations.join('\n')).toMatch(
      /request POST \/repos\/\{owner\}\/\{repo\}\/statuses\/\{sha\}: data\/state/,
    );
  });

  it('records an answer of its own that does not match the description', async () => {
    gh.tamper = (_call, status, body) => (status === 201 ? { ...(body as object), head: undefined } : body);
    expect(
      (await call('POST', '/repos/acme/env/pulls', { head: 'kpromo/prod', base: 'main', title: 't' })).status,
    ).toBe(201);
    expect(gh.violations).toEqual(["response 201 POST /repos/acme/env/pulls: data must have required property 'head'"]);
  });

  it('records a GET /user answer that is neither a private-user nor a public-user', async () => {
    gh.tamper = () => ({ message: 'teapot' });
    expect((await fetch(`${gh.url}/user`, { headers: auth })).status).toBe(200);
    expect(gh.violations).toHaveLength(1);
    expect(gh.violations[0]).toMatch(/^response 200 GET \/user: .*must match exactly one schema in oneOf/);
  });

  it('refuses a status description over 140 characters as GitHub does (422, in errors[])', async () => {
    const res = await call('POST', `/repos/acme/env/statuses/${sha('c1')}`, {
      state: 'pending',
      description: 'x'.repeat(141),
    });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({
      message: 'Validation Failed',
      errors: [{ field: 'description', message: 'description is too long (maximum is 140 characters)' }],
    });
    expect(gh.violations).toEqual([]);
  });

  it('answers 401 without a known token, and 400 for an API version it does not model', async () => {
    expect((await fetch(`${gh.url}/user`)).status).toBe(401);
    expect((await fetch(`${gh.url}/user`, { headers: { ...auth, 'x-github-api-version': '2026-03-10' } })).status).toBe(
      400,
    );
    expect(gh.violations).toEqual([
      'request GET /user: X-GitHub-Api-Version 2026-03-10 is not modelled',
      'response 400 GET /user: status 400 is not documented for this operation',
    ]);
  });
});
