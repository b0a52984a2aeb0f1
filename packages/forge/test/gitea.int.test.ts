// The Gitea adapter against a real Gitea (built from its Go module by test/gitea/build.sh): pull
// requests opened once and found again, statuses, reviews bound to their commit, the merge guarded by
// the approved head, branch protection refusing what it should, and close. Branches are pushed with
// real git over HTTP, as kpromo's git delivery pushes them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Gitea, type GiteaUser, needComponents, runGit, startGitea, writeTree } from '@kpromo/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGiteaForge, type Forge, ForgeError, type RepoRef } from '../src/index.js';

await needComponents('gitea');

let gitea: Gitea;
/** The user kpromo acts as: opens, merges and closes. */
let bot: GiteaUser;
/** A person who reviews (write access on each repository). */
let alice: GiteaUser;
let forge: Forge;
let repos = 0;

beforeAll(async () => {
  gitea = await startGitea();
  bot = await gitea.createUser('kpromo-bot');
  alice = await gitea.createUser('alice');
  forge = createGiteaForge({ baseUrl: gitea.url, token: bot.token });
});
afterAll(async () => {
  await gitea?.stop();
});

/** Commits `files` on `branch` (from main when new) and pushes it over HTTP; returns the new head. */
function push(repo: RepoRef, branch: string, files: Record<string, string>): string {
  const work = mkdtempSync(join(tmpdir(), 'kpromo-forge-push-'));
  try {
    runGit(work, '-c', 'credential.helper=', 'clone', '-q', gitea.gitUrl(bot, repo), '.');
    const exists = runGit(work, 'ls-remote', '--heads', 'origin', branch) !== '';
    runGit(work, 'checkout', '-q', ...(exists ? [branch] : ['-b', branch]));
    writeTree(work, files);
    runGit(work, 'add', '-A');
    runGit(work, 'commit', '-q', '-m', `change ${Object.keys(files).join(', ')}`);
    runGit(work, '-c', 'credential.helper=', 'push', '-q', 'origin', branch);
    return runGit(work, 'rev-parse', 'HEAD');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A new repository of the bot's, alice a writer, with `promote` one commit ahead of main. */
async function world(): Promise<{ repo: RepoRef; head: string }> {
  const created = await gitea.createRepo(bot, `envs-${++repos}`, { files: { 'dev/app.yaml': 'image: web:1\n' } });
  const repo = { owner: created.owner, name: created.name };
  await gitea.addCollaborator(repo, alice.login, 'write');
  return { repo, head: push(repo, 'promote', { 'dev/app.yaml': 'image: web:2\n' }) };
}

const open = (repo: RepoRef, body = 'Promotes web 2 to dev.') =>
  forge.ensurePullRequest(repo, { head: 'promote', base: 'main', title: 'Promote web 2 to dev', body });

const review = (repo: RepoRef, n: number, who: GiteaUser, event: 'APPROVED' | 'COMMENT' | 'REQUEST_CHANGES') =>
  gitea.api(who, 'POST', `/repos/${repo.owner}/${repo.name}/pulls/${n}/reviews`, {
    event,
    body: `${event} by ${who.login}`,
  });

/** Waits until Gitea has taken the pushed head into the pull request (its push hook runs through a queue). */
async function waitForHead(repo: RepoRef, n: number, sha: string): Promise<void> {
  await expect.poll(async () => (await forge.getPullRequest(repo, n)).head.sha).toBe(sha);
}

describe('Gitea adapter against a real Gitea', () => {
  it('currentUser is the login of the token', async () => {
    expect(await forge.currentUser()).toBe('kpromo-bot');
    expect(await createGiteaForge({ baseUrl: gitea.url, token: alice.token }).currentUser()).toBe('alice');
  });

  it('ensurePullRequest opens once, finds the same pull request again and updates a changed body', async () => {
    const { repo, head } = await world();
    const first = await open(repo);
    expect(first).toMatchObject({
      state: 'open',
      head: { branch: 'promote', sha: head },
      base: { branch: 'main' },
      title: 'Promote web 2 to dev',
      body: 'Promotes web 2 to dev.',
      author: 'kpromo-bot',
    });
    expect(first.url).toBe(`${gitea.url}/${repo.owner}/${repo.name}/pulls/${first.number}`);
    expect(first.merged).toBeUndefined();

    const again = await open(repo);
    expect(again.number).toBe(first.number);

    const changed = await open(repo, 'Promotes web 2 to dev (plan 2).');
    expect(changed.number).toBe(first.number);
    expect((await forge.getPullRequest(repo, first.number)).body).toBe('Promotes web 2 to dev (plan 2).');
    const all = await gitea.api<unknown[]>(bot, 'GET', `/repos/${repo.owner}/${repo.name}/pulls?state=all`);
    expect(all).toHaveLength(1);
  });

  it('setStatus reports statuses that Gitea shows on the commit, one line each', async () => {
    const { repo, head } = await world();
    await forge.setStatus(repo, head, { context: 'kpromo/approval', state: 'pending', description: 'Waiting' });
    await forge.setStatus(repo, head, {
      context: 'kpromo/approval',
      state: 'success',
      description: 'Approved by alice\nsecond line',
      targetUrl: 'https://kpromo.example/plans/1',
    });
    await forge.setStatus(repo, head, { context: 'kpromo/verify', state: 'failure', description: 'x'.repeat(300) });
    const combined = await gitea.api<{
      state: string;
      statuses: Array<{ context: string; status: string; description: string; target_url: string }>;
    }>(bot, 'GET', `/repos/${repo.owner}/${repo.name}/commits/${head}/status`);
    const byContext = Object.fromEntries(combined.statuses.map((s) => [s.context, s]));
    expect(byContext['kpromo/approval']).toMatchObject({
      status: 'success',
      description: 'Approved by alice',
      target_url: 'https://kpromo.example/plans/1',
    });
    expect(byContext['kpromo/verify'].status).toBe('failure');
    expect(byContext['kpromo/verify'].description).toHaveLength(140);
    expect(combined.state).toBe('failure');
    await expect(
      forge.setStatus(repo, 'not-a-sha', { context: 'kpromo/approval', state: 'success', description: '' }),
    ).rejects.toThrow(ForgeError);
  });

  it("lists another user's reviews with the commit they were given on; a new commit leaves the approval behind", async () => {
    const { repo, head } = await world();
    const pr = await open(repo);
    await review(repo, pr.number, alice, 'COMMENT');
    await review(repo, pr.number, alice, 'APPROVED');
    const reviews = await forge.listReviews(repo, pr.number);
    expect(reviews.map((r) => [r.user, r.state, r.commit])).toEqual([
      ['alice', 'COMMENTED', head],
      ['alice', 'APPROVED', head],
    ]);
    expect(reviews[1].submittedAt).toMatch(/^\d{4}-/);
    expect(reviews[1].id).toBeGreaterThan(reviews[0].id);

    const next = push(repo, 'promote', { 'dev/extra.yaml': 'replicas: 2\n' });
    await waitForHead(repo, pr.number, next);
    const approval = (await forge.listReviews(repo, pr.number)).find((r) => r.state === 'APPROVED');
    expect(approval?.commit).toBe(head);
    expect(approval?.commit).not.toBe(next);
    // Gitea itself marks the reviews of an older head outdated.
    await expect.poll(async () => (await forge.listReviews(repo, pr.number)).map((r) => r.stale)).toEqual([true, true]);
  });

  it('an approval Gitea dismisses on a new commit (dismiss_stale_approvals) is listed as DISMISSED', async () => {
    const { repo, head } = await world();
    await gitea.protectBranch(repo, 'main', { requiredApprovals: 1, dismissStaleApprovals: true });
    const pr = await open(repo);
    await review(repo, pr.number, alice, 'APPROVED');
    expect((await forge.listReviews(repo, pr.number)).map((r) => [r.state, r.commit, r.stale])).toEqual([
      ['APPROVED', head, undefined],
    ]);
    const next = push(repo, 'promote', { 'dev/extra.yaml': 'replicas: 2\n' });
    await waitForHead(repo, pr.number, next);
    await expect
      .poll(async () => (await forge.listReviews(repo, pr.number)).map((r) => [r.user, r.state, r.commit, r.stale]))
      .toEqual([['alice', 'DISMISSED', head, true]]);
  });

  it('merge refuses a sha that is no longer the head, merges at the head and reports who merged and the commit', async () => {
    const { repo, head } = await world();
    const pr = await open(repo);
    const next = push(repo, 'promote', { 'dev/extra.yaml': 'replicas: 2\n' });
    await waitForHead(repo, pr.number, next);

    const stale = forge.merge(repo, pr.number, { sha: head, title: 'Promote', message: 'stale' });
    await expect(stale).rejects.toThrow(ForgeError);
    await expect(stale).rejects.toThrow(/head out of date/);
    expect((await forge.getPullRequest(repo, pr.number)).state).toBe('open');

    const { commit } = await forge.merge(repo, pr.number, {
      sha: next,
      title: 'Promote web 2 to dev',
      message: 'Plan 1, approved by alice.',
    });
    const merged = await forge.getPullRequest(repo, pr.number);
    expect(merged.state).toBe('merged');
    expect(merged.merged).toMatchObject({ by: 'kpromo-bot', commit });
    expect(merged.merged?.at).toMatch(/^\d{4}-/);
    const main = await gitea.api<{ commit: { id: string; message: string } }>(
      bot,
      'GET',
      `/repos/${repo.owner}/${repo.name}/branches/main`,
    );
    expect(main.commit.id).toBe(commit);
    expect(main.commit.message).toMatch(/^Promote web 2 to dev\n\nPlan 1, approved by alice\./);
  });

  it('branch protection refuses a merge without the required approval and status, with Gitea’s message', async () => {
    const { repo, head } = await world();
    await gitea.protectBranch(repo, 'main', {
      requiredApprovals: 1,
      statusContexts: ['kpromo/approval'],
      mergers: ['kpromo-bot'],
    });
    const pr = await open(repo);
    const attempt = () => forge.merge(repo, pr.number, { sha: head, title: 'Promote', message: '' });

    // Gitea checks the required statuses first, then the approvals.
    const noStatus = await attempt().catch((e: unknown) => e);
    expect(noStatus).toBeInstanceOf(ForgeError);
    expect((noStatus as ForgeError).status).toBe(405);
    expect((noStatus as ForgeError).message).toMatch(/Not all required status checks successful/);

    await forge.setStatus(repo, head, { context: 'kpromo/approval', state: 'success', description: 'Approved' });
    const noApproval = await attempt().catch((e: unknown) => e);
    expect(noApproval).toBeInstanceOf(ForgeError);
    expect((noApproval as ForgeError).message).toMatch(/Does not have enough approvals/);

    await review(repo, pr.number, alice, 'APPROVED');
    const { commit } = await attempt();
    expect((await forge.getPullRequest(repo, pr.number)).merged?.commit).toBe(commit);
  });

  it('only the allowed mergers may merge under protection: another writer is refused', async () => {
    const { repo, head } = await world();
    await gitea.protectBranch(repo, 'main', { mergers: ['kpromo-bot'] });
    const pr = await open(repo);
    const asAlice = createGiteaForge({ baseUrl: gitea.url, token: alice.token });
    await expect(asAlice.merge(repo, pr.number, { sha: head, title: 'x', message: '' })).rejects.toThrow(
      /not allowed to merge/,
    );
  });

  it('branchProtection reports the rule Gitea applies to the branch (a glob rule too); a writer sees it without the rule’s other settings', async () => {
    const { repo } = await world();
    expect(await forge.branchProtection(repo, 'main')).toBeUndefined();
    await gitea.protectBranch(repo, 'main', {
      requiredApprovals: 2,
      statusContexts: ['kpromo/approval', 'ci/*'],
      dismissStaleApprovals: true,
    });
    // The bot owns the repository (an admin of it): Gitea names the rule and its settings.
    expect(await forge.branchProtection(repo, 'main')).toEqual({
      requiredApprovals: 2,
      requiredStatusContexts: ['kpromo/approval', 'ci/*'],
      dismissesStaleApprovals: true,
      source: 'rule main',
    });
    // A writer may read the branch but not the rule: what it requires, not whether stale approvals go.
    const asAlice = createGiteaForge({ baseUrl: gitea.url, token: alice.token });
    expect(await asAlice.branchProtection(repo, 'main')).toEqual({
      requiredApprovals: 2,
      requiredStatusContexts: ['kpromo/approval', 'ci/*'],
    });

    // A glob rule, matched by Gitea, for a branch with a slash; no status check: no contexts.
    push(repo, 'release/prod', { 'prod/app.yaml': 'image: web:1\n' });
    await gitea.protectBranch(repo, 'release/*', { requiredApprovals: 1 });
    expect(await forge.branchProtection(repo, 'release/prod')).toEqual({
      requiredApprovals: 1,
      requiredStatusContexts: [],
      dismissesStaleApprovals: false,
      source: 'rule release/*',
    });
    await expect(forge.branchProtection(repo, 'gone')).rejects.toMatchObject({ name: 'ForgeError', status: 404 });
  });

  it('close closes without merging; the next ensurePullRequest opens a new one', async () => {
    const { repo } = await world();
    const pr = await open(repo);
    await forge.close(repo, pr.number);
    const closed = await forge.getPullRequest(repo, pr.number);
    expect(closed.state).toBe('closed');
    expect(closed.merged).toBeUndefined();
    const reopened = await open(repo);
    expect(reopened.number).not.toBe(pr.number);
    expect(reopened.state).toBe('open');
  });

  it('errors name the call and what Gitea answered', async () => {
    const { repo } = await world();
    const missing = await forge.getPullRequest(repo, 999).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ForgeError);
    expect((missing as ForgeError).status).toBe(404);
    expect((missing as ForgeError).message).toMatch(
      new RegExp(`^gitea reading pull request ${repo.owner}/${repo.name}#999: 404`),
    );
    const badToken = createGiteaForge({ baseUrl: gitea.url, token: 'wrong' });
    await expect(badToken.currentUser()).rejects.toMatchObject({ name: 'ForgeError', status: 401 });
  });
});
