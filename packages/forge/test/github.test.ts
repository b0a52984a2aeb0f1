import { GitHubStandIn, sha } from '@kpromo/test-harness/github';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGitHubForge, type Forge, ForgeError, type RepoRef } from '../src/index.js';

// The GitHub adapter against the stand-in, which checks every request and answer against GitHub's
// published OpenAPI description (test/github/standIn.ts): no test may leave a violation behind.
let gh: GitHubStandIn;
let forge: Forge;
const repo: RepoRef = { owner: 'acme', name: 'env' };
const HEAD = 'kpromo/prod';
const open = { head: HEAD, base: 'main', title: 'Promote cart 1.2.0 to prod', body: 'Plan: cart 1.2.0' };

beforeEach(async () => {
  gh = new GitHubStandIn({ 'kpromo-token': 'kpromo-bot' });
  await gh.start();
  gh.addRepo('acme', 'env', { branches: { main: sha('main'), [HEAD]: sha('c1') } });
  forge = createGitHubForge({ baseUrl: gh.url, token: 'kpromo-token' });
});

afterEach(async () => {
  await gh.stop();
  expect(gh.violations).toEqual([]);
});

/** The ForgeError a call throws (fails the test if it resolves or throws something else). */
async function refusal(p: Promise<unknown>): Promise<ForgeError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(ForgeError);
  return e as ForgeError;
}

describe('GitHub forge against the stand-in', () => {
  it('currentUser is the token’s login, sent with the token, the API version and GitHub’s media type', async () => {
    expect(forge.kind).toBe('github');
    expect(await forge.currentUser()).toBe('kpromo-bot');
    expect(gh.calls).toEqual([
      expect.objectContaining({
        method: 'GET',
        path: '/user',
        status: 200,
        apiVersion: '2022-11-28',
        accept: 'application/vnd.github+json',
      }),
    ]);
  });

  it('ensurePullRequest opens one pull request, finds it again, and updates a changed title and body', async () => {
    const first = await forge.ensurePullRequest(repo, open);
    expect(first).toEqual({
      number: 1,
      url: `${gh.url}/acme/env/pull/1`,
      state: 'open',
      head: { branch: HEAD, sha: sha('c1') },
      base: { branch: 'main' },
      title: open.title,
      body: open.body,
      author: 'kpromo-bot',
    });
    expect(await forge.ensurePullRequest(repo, open)).toEqual(first);
    expect(gh.callCount(/^POST /)).toBe(1);
    expect(gh.callCount(/^PATCH /)).toBe(0);
    // The list is filtered by `owner:branch` and base, as GitHub reads it.
    expect(gh.calls[0].query).toEqual({ state: 'open', head: `acme:${HEAD}`, base: 'main' });

    const retitled = await forge.ensurePullRequest(repo, { ...open, title: 'Promote cart 1.2.1 to prod', body: 'v2' });
    expect(retitled).toMatchObject({ number: 1, title: 'Promote cart 1.2.1 to prod', body: 'v2' });
    expect(gh.pull('acme', 'env', 1)).toMatchObject({ title: 'Promote cart 1.2.1 to prod', body: 'v2' });
    expect(gh.repos.get('acme/env')?.pulls).toHaveLength(1);
  });

  it('ensurePullRequest does not take an open pull request of another head or base for its own', async () => {
    gh.setBranch('acme', 'env', 'feature', sha('f1'));
    gh.openPull('acme', 'env', { head: 'feature', base: 'main', title: 'someone else', author: 'alice' });
    const pr = await forge.ensurePullRequest(repo, open);
    expect(pr).toMatchObject({ number: 2, head: { branch: HEAD } });
  });

  it('ensurePullRequest uses the pull request opened between its list and its create (GitHub’s 422)', async () => {
    let raced = false;
    const racing = createGitHubForge({
      baseUrl: gh.url,
      token: 'kpromo-token',
      fetch: async (req) => {
        const res = await fetch(req);
        // Another leader opens it right after this one listed none.
        if (!raced && req.method === 'GET') {
          raced = true;
          gh.openPull('acme', 'env', { ...open, author: 'kpromo-bot' });
        }
        return res;
      },
    });
    const pr = await racing.ensurePullRequest(repo, open);
    expect(pr).toMatchObject({ number: 1, title: open.title });
    expect(gh.calls.map((c) => `${c.method} ${c.status}`)).toEqual(['GET 200', 'POST 422', 'GET 200']);
    expect(gh.repos.get('acme/env')?.pulls).toHaveLength(1);
  });

  it('getPullRequest follows the head branch while open', async () => {
    await forge.ensurePullRequest(repo, open);
    gh.setBranch('acme', 'env', HEAD, sha('c2'));
    expect((await forge.getPullRequest(repo, 1)).head).toEqual({ branch: HEAD, sha: sha('c2') });
  });

  it('listReviews reads every page, oldest first, with states, reviewers and the commit each was given on', async () => {
    await forge.ensurePullRequest(repo, open);
    const states = ['APPROVED', 'CHANGES_REQUESTED', 'COMMENTED', 'DISMISSED'] as const;
    for (let i = 0; i < 230; i++)
      gh.addReview('acme', 'env', 1, { user: `user${i}`, state: states[i % 4], commit: sha(`c${i % 3}`) });
    // A draft review is seen by its author only: the bot's is listed, alice's is not.
    gh.addReview('acme', 'env', 1, { user: 'kpromo-bot', state: 'PENDING' });
    gh.addReview('acme', 'env', 1, { user: 'alice', state: 'PENDING' });

    const reviews = await forge.listReviews(repo, 1);
    expect(reviews).toHaveLength(231);
    expect(reviews[0]).toEqual({
      id: expect.any(Number),
      user: 'user0',
      state: 'APPROVED',
      commit: sha('c0'),
      submittedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(reviews[3]).toMatchObject({ user: 'user3', state: 'DISMISSED', stale: true });
    expect(reviews[229]).toMatchObject({ user: 'user229', state: 'CHANGES_REQUESTED', commit: sha('c1') });
    expect(reviews[230]).toMatchObject({ user: 'kpromo-bot', state: 'PENDING' });
    expect(reviews[230].submittedAt).toBeUndefined();
    expect(reviews.map((r) => r.id)).toEqual([...reviews.map((r) => r.id)].sort((a, b) => a - b));
    const pages = gh.calls.filter((c) => c.path.endsWith('/reviews'));
    expect(pages.map((c) => c.query)).toEqual([1, 2, 3].map((page) => ({ per_page: '100', page: String(page) })));
  });

  it('setStatus posts to the commit and cuts a description over 140 characters (GitHub refuses it whole)', async () => {
    await forge.setStatus(repo, sha('c1'), {
      context: 'kpromo/approval',
      state: 'pending',
      description: `Waiting for 2 approvals: ${'x'.repeat(200)}`,
      targetUrl: 'https://kpromo.example/plans/cart',
    });
    await forge.setStatus(repo, sha('c1'), { context: 'kpromo/gates', state: 'success', description: 'Gates passed' });
    const [approval, gates] = gh.repos.get('acme/env')?.statuses.get(sha('c1')) ?? [];
    expect(approval).toMatchObject({
      context: 'kpromo/approval',
      state: 'pending',
      targetUrl: 'https://kpromo.example/plans/cart',
      creator: 'kpromo-bot',
    });
    expect(approval.description).toHaveLength(140);
    expect(approval.description).toMatch(/^Waiting for 2 approvals: x+…$/);
    expect(gates).toMatchObject({
      context: 'kpromo/gates',
      state: 'success',
      description: 'Gates passed',
      targetUrl: null,
    });
  });

  it('setStatus on a commit GitHub does not know is a ForgeError with GitHub’s reason', async () => {
    const e = await refusal(forge.setStatus(repo, sha('nowhere'), { context: 'c', state: 'error', description: 'd' }));
    expect(e.status).toBe(422);
    expect(e.message).toContain('set status c on');
    expect(e.message).toContain(`Validation Failed: No commit found for SHA: ${sha('nowhere')}`);
  });

  it('merge with the head sha merges; the pull request then reads merged, by whom, into which commit', async () => {
    await forge.ensurePullRequest(repo, open);
    const { commit } = await forge.merge(repo, 1, {
      sha: sha('c1'),
      title: 'Promote cart',
      message: 'Approved by alice',
    });
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    expect(gh.repos.get('acme/env')?.branches.get('main')).toBe(commit);
    const pr = await forge.getPullRequest(repo, 1);
    expect(pr.state).toBe('merged');
    expect(pr.merged).toEqual({ by: 'kpromo-bot', commit, at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    const put = gh.calls.find((c) => c.method === 'PUT');
    expect(put).toMatchObject({ path: '/repos/acme/env/pulls/1/merge', status: 200 });
  });

  it('merge is refused (409, GitHub’s message) when the head moved past the approved commit', async () => {
    await forge.ensurePullRequest(repo, open);
    gh.setBranch('acme', 'env', HEAD, sha('c2'));
    const e = await refusal(forge.merge(repo, 1, { sha: sha('c1'), title: 't', message: 'm' }));
    expect(e.status).toBe(409);
    expect(e.message).toBe(
      'GitHub merge pull request #1 (/repos/acme/env/pulls/1/merge) answered 409: Head branch was modified. Review and try the merge again.',
    );
    expect(gh.pull('acme', 'env', 1).state).toBe('open');
  });

  it('merge is refused (405, GitHub’s message) until the required approvals are given', async () => {
    gh.repos.get('acme/env')!.requiredApprovals = 2;
    await forge.ensurePullRequest(repo, open);
    gh.addReview('acme', 'env', 1, { user: 'alice', state: 'APPROVED' });
    const e = await refusal(forge.merge(repo, 1, { sha: sha('c1'), title: 't', message: 'm' }));
    expect(e.status).toBe(405);
    expect(e.message).toContain(
      'answered 405: At least 2 approving reviews are required by reviewers with write access.',
    );
    gh.addReview('acme', 'env', 1, { user: 'bob', state: 'APPROVED' });
    await forge.merge(repo, 1, { sha: sha('c1'), title: 't', message: 'm' });
    expect((await forge.getPullRequest(repo, 1)).state).toBe('merged');
  });

  it('branchProtection reads the required approvals, status contexts and stale-review dismissal; an unprotected branch is undefined', async () => {
    gh.setBranch('acme', 'env', 'release/prod', sha('r1'));
    gh.protectBranch('acme', 'env', 'main', {
      requiredApprovals: 2,
      dismissStaleReviews: true,
      statusContexts: ['kpromo/approval', 'ci/build'],
    });
    gh.protectBranch('acme', 'env', 'release/prod', { statusContexts: ['kpromo/gates'] });
    expect(await forge.branchProtection(repo, 'main')).toEqual({
      requiredApprovals: 2,
      requiredStatusContexts: ['kpromo/approval', 'ci/build'],
      dismissesStaleApprovals: true,
      source: 'branch protection',
    });
    // A branch name with a slash is one path parameter; no required reviews: nothing to dismiss.
    expect(await forge.branchProtection(repo, 'release/prod')).toEqual({
      requiredApprovals: 0,
      requiredStatusContexts: ['kpromo/gates'],
      dismissesStaleApprovals: false,
      source: 'branch protection',
    });
    expect(await forge.branchProtection(repo, HEAD)).toBeUndefined();
    expect(gh.calls.map((c) => `${c.status} ${c.path}`)).toEqual([
      '200 /repos/acme/env/branches/main/protection',
      '200 /repos/acme/env/rules/branches/main',
      '200 /repos/acme/env/branches/release%2Fprod/protection',
      '200 /repos/acme/env/rules/branches/release%2Fprod',
      `404 /repos/acme/env/branches/${encodeURIComponent(HEAD)}/protection`,
      `200 /repos/acme/env/rules/branches/${encodeURIComponent(HEAD)}`,
    ]);
  });

  it('branchProtection adds the rules of the rulesets that apply: the most approvals, every status context', async () => {
    gh.protectBranch('acme', 'env', 'main', { requiredApprovals: 1, statusContexts: ['ci/build'] });
    gh.addRuleset('acme', 'env', { branches: ['main'], requiredApprovals: 2, dismissStaleReviewsOnPush: true });
    gh.addRuleset('acme', 'env', { branches: ['main', HEAD], statusContexts: ['kpromo/approval'] });
    expect(await forge.branchProtection(repo, 'main')).toEqual({
      requiredApprovals: 2,
      requiredStatusContexts: ['ci/build', 'kpromo/approval'],
      dismissesStaleApprovals: true,
      source: 'branch protection and rulesets',
    });
    // Rulesets alone protect a branch too.
    expect(await forge.branchProtection(repo, HEAD)).toEqual({
      requiredApprovals: 0,
      requiredStatusContexts: ['kpromo/approval'],
      dismissesStaleApprovals: false,
      source: 'rulesets',
    });
  });

  it('branchProtection is a ForgeError, never "unprotected", for a token that may not read it or a missing branch', async () => {
    gh.addRepo('acme', 'locked', { admins: ['alice'] });
    gh.protectBranch('acme', 'locked', 'main', { requiredApprovals: 1 });
    const denied = await refusal(forge.branchProtection({ owner: 'acme', name: 'locked' }, 'main'));
    expect(denied.status).toBe(403);
    expect(denied.message).toBe(
      'GitHub get branch protection of main (/repos/acme/locked/branches/main/protection) answered 403: Resource not accessible by personal access token',
    );
    const missing = await refusal(forge.branchProtection(repo, 'gone'));
    expect(missing.status).toBe(404);
    expect(missing.message).toContain('answered 404: Branch not found');

    // What rulesets require is read; the unread rule is named, since it may require more.
    gh.addRuleset('acme', 'locked', { branches: ['main'], statusContexts: ['kpromo/approval'] });
    expect(await forge.branchProtection({ owner: 'acme', name: 'locked' }, 'main')).toEqual({
      requiredApprovals: 0,
      requiredStatusContexts: ['kpromo/approval'],
      source: 'rulesets',
      unread: expect.stringMatching(/^its branch protection rule \(GitHub get branch protection of main .* 403: /),
    });
  });

  it('close closes without merging', async () => {
    await forge.ensurePullRequest(repo, open);
    await forge.close(repo, 1);
    const pr = await forge.getPullRequest(repo, 1);
    expect(pr.state).toBe('closed');
    expect(pr.merged).toBeUndefined();
    // Closed: a new plan opens a new pull request.
    expect((await forge.ensurePullRequest(repo, open)).number).toBe(2);
  });
});

describe('GitHub forge errors', () => {
  it('a missing repository, a bad token and a server error are ForgeErrors naming the call and GitHub’s message', async () => {
    const missing = await refusal(forge.getPullRequest({ owner: 'acme', name: 'nope' }, 1));
    expect(missing.message).toBe('GitHub get pull request #1 (/repos/acme/nope/pulls/1) answered 404: Not Found');
    expect(missing.status).toBe(404);

    const stranger = createGitHubForge({ baseUrl: gh.url, token: 'wrong' });
    const bad = await refusal(stranger.currentUser());
    expect(bad.message).toBe(
      'GitHub get the authenticated user (/user) answered 401: Bad credentials (check the token)',
    );

    gh.faults = [{ status: 503, times: 1 }];
    const down = await refusal(forge.listReviews(repo, 1));
    expect(down.status).toBe(503);
    expect(down.message).toContain('list reviews of #1 (page 1)');
  });

  it('a redirect (GitHub’s 301 for a renamed repository) is not followed', async () => {
    let elsewhere = 0;
    const other = new GitHubStandIn();
    await other.start();
    try {
      gh.faults = [{ status: 301, times: 1, headers: { location: `${other.url}/repos/acme/renamed/pulls/1` } }];
      const e = await refusal(forge.getPullRequest(repo, 1));
      expect(e.status).toBe(301);
      expect(e.message).toContain('redirects are not followed');
      elsewhere = other.calls.length;
    } finally {
      await other.stop();
    }
    expect(elsewhere).toBe(0);
  });

  it('refuses a base URL with credentials, a query or another scheme, and an empty token', () => {
    expect(() => createGitHubForge({ baseUrl: 'https://user:pw@api.github.com', token: 't' })).toThrow(ForgeError);
    expect(() => createGitHubForge({ baseUrl: 'https://api.github.com?x=1', token: 't' })).toThrow(/query/);
    expect(() => createGitHubForge({ baseUrl: 'ftp://api.github.com', token: 't' })).toThrow(/http\(s\)/);
    expect(() => createGitHubForge({ token: '' })).toThrow(/token is empty/);
  });

  it('listReviews stops after 100 pages when the Link header always names a next one', async () => {
    let calls = 0;
    const endless = createGitHubForge({
      token: 't',
      fetch: async () => {
        calls++;
        return new Response('[]', {
          headers: { 'content-type': 'application/json', link: '<https://api.github.com/x?page=2>; rel="next"' },
        });
      },
    });
    expect((await refusal(endless.listReviews(repo, 1))).message).toContain('more than 100 pages');
    expect(calls).toBe(100);
  });

  it('sends requests only under the base URL path (GitHub Enterprise Server: /api/v3)', async () => {
    const seen: string[] = [];
    const ghes = createGitHubForge({
      baseUrl: 'https://ghe.example/api/v3',
      token: 't',
      fetch: async (req) => {
        seen.push(req.url);
        return new Response(JSON.stringify({ login: 'bot' }), { headers: { 'content-type': 'application/json' } });
      },
    });
    expect(await ghes.currentUser()).toBe('bot');
    expect(seen).toEqual(['https://ghe.example/api/v3/user']);
  });
});
