import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PromotionPlan } from '@kpromo/api';
import { planProgress } from '@kpromo/contract';
import { createGiteaForge, type Forge, ForgeError, type RepoRef } from '@kpromo/forge';
import {
  applyCrds,
  type Flux,
  fluxReady,
  type Gitea,
  type GiteaUser,
  kubeConfigFor,
  kustomizeAppFiles,
  needComponents,
  runGit,
  startFlux,
  startGitea,
  waitFor,
  writeTree,
} from '@kpromo/test-harness';
import {
  appliedCommit,
  applyCr,
  applyDeployment,
  applyDevProdEnvironments,
  appOf,
  automaticRollbackOf,
  callApi,
  controllerConfig,
  createAndApprove,
  crs,
  deleteNs,
  ensureNs,
  getDeployment,
  grantRole,
  pushTestImage,
  type RemoteGitops,
  restFor,
  runNamespaces,
  startGitops,
  TEST_ADMIN,
  waitPlan,
  waitReady,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('flux', 'gitea');

/**
 * Promotion as a pull request against a real Gitea (built from its Go module) and the real Flux:
 * kpromo commits each app to the plan's own branch, opens a pull request into the environment
 * branch with the evidence and reports its gates as commit statuses; Gitea's branch protection
 * requires one approval and kpromo's `kpromo/approval` status; Flux applies the merge commit to the
 * dev cluster, where kwok rolls it out. Users: `kpromo-bot` (kpromo's token: owns the repository),
 * `rm` (a release manager RBAC lets approve into prod) and `dev`, the same person as the plan's
 * requester by the controller's persons mapping.
 */
const names = runNamespaces('pr-delivery');
const NS = names.ns;
const APPS = names.apps;
const GITOPS = `${names.apps}-gitops`;

const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const log = createLogger({ level: process.env.CTL_TEST_LOG ?? 'silent' });

let flux: Flux;
let gitea: Gitea;
let bot: GiteaUser;
let rm: GiteaUser;
let devUser: GiteaUser;
let repo: RepoRef;
let gitops: RemoteGitops;
let ctl: Running;
/** The forge as each person acts on it. */
const as = (u: GiteaUser): Forge => createGiteaForge({ baseUrl: gitea.url, token: u.token });
let version = 0;

/** A new version of web running in dev (the source): what the next plan promotes. */
async function newDevVersion(): Promise<string> {
  const tag = `v1.${++version}.0`;
  const { digest } = await pushTestImage({ host: source, repository: 'shop/web', tag, seed: `pr-${tag}` });
  await applyDeployment(dev, APPS, 'web', `${source}/shop/web:${tag}@${digest}`);
  await waitReady(dev, APPS, 'web');
  // Once the controller runs, the candidates it shows (GET /diff) must be this version before a
  // plan approves what was shown: its cache sees the rollout a moment after the test does.
  if (ctl)
    await waitFor(`web ${tag} among the candidates from dev`, async () => {
      const r = await callApi(ctl.port, `/api/v1/diff?namespace=${NS}&from=dev&to=prod`);
      const d = (await r.json()) as { candidates?: Array<{ application: string; from: { digest: string } }> };
      return d.candidates?.some((c) => c.application === 'web' && c.from.digest === digest) || undefined;
    });
  return digest;
}

/** Creates a plan from dev to prod as the requester (TEST_ADMIN), without approving it. */
async function createPlan(name: string): Promise<void> {
  const r = await callApi(ctl.port, '/api/v1/plans', {
    method: 'POST',
    body: { namespace: NS, flow: 'main', from: 'dev', to: 'prod', name },
  });
  if (r.status !== 201) throw new Error(`POST /api/v1/plans: ${r.status} ${await r.text()}`);
}

/** The plan once its pull request is open and kpromo has judged it (reviews and statuses). */
const withPullRequest = (name: string, pred: (p: PromotionPlan) => boolean = () => true) =>
  waitPlan(dev, NS, name, (p) => !!p.status?.pullRequest?.number && pred(p), 150_000);

/** Each context's current status on `sha`: Gitea's combined status (the latest per context). */
const statuses = async (sha: string) =>
  Object.fromEntries(
    (
      await gitea.api<{ statuses: Array<{ context: string; status: string }> | null }>(
        bot,
        'GET',
        `/repos/${repo.owner}/${repo.name}/commits/${sha}/status`,
      )
    ).statuses?.map((s) => [s.context, s.status]) ?? [],
  );

const review = (who: GiteaUser, n: number) =>
  gitea.api(who, 'POST', `/repos/${repo.owner}/${repo.name}/pulls/${n}/reviews`, {
    event: 'APPROVED',
    body: `approved by ${who.login}`,
  });

beforeAll(async () => {
  // This file's CRD fields and the admission policies, also when it runs alone on reused clusters.
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  flux = await startFlux({ kubeconfig, log: (m) => console.log(`[flux] ${m}`) });
  gitea = await startGitea();
  bot = await gitea.createUser('kpromo-bot');
  rm = await gitea.createUser('rm');
  devUser = await gitea.createUser('dev');
  for (const ns of [NS, APPS, GITOPS]) await ensureNs(dev, ns);

  await newDevVersion();
  const old = await pushTestImage({ host: target, repository: 'prod/shop/web', tag: 'v1.0.0', seed: 'pr-old' });
  const created = await gitea.createRepo(bot, 'gitops', {
    files: kustomizeAppFiles({ dir: 'apps/web', name: 'web', image: `${target}/prod/shop/web:v1.0.0@${old.digest}` }),
  });
  repo = { owner: created.owner, name: created.name };
  for (const u of [rm, devUser]) await gitea.addCollaborator(repo, u.login, 'write');
  // What a regulated team configures: one approval, and kpromo's own judgement as a required status.
  await gitea.protectBranch(repo, 'main', { requiredApprovals: 1, statusContexts: ['kpromo/approval'] });

  const gitUrl = `${gitea.url}/${repo.owner}/${repo.name}.git`;
  gitops = await startGitops({
    dev,
    flux,
    ns: NS,
    remote: { url: gitUrl, auth: { username: bot.login, password: bot.token }, destination: `${gitea.url}/` },
  });
  await gitops.addApp('web', GITOPS, { wait: true });
  await gitops.waitKustomization(
    'web',
    'applies the seed',
    (s) => !!appliedCommit(s) && fluxReady(s)?.status === 'True',
  );
  await waitReady(dev, GITOPS, 'web');

  // kpromo's forge token: a credential allowed to go to Gitea only.
  await dev.apply(
    `/api/v1/namespaces/${NS}/secrets/forge-token`,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: 'forge-token',
        namespace: NS,
        labels: { 'promotions.kpromo.dev/credential': 'true' },
        annotations: { 'promotions.kpromo.dev/destinations': `${gitea.url}/` },
      },
      data: { token: Buffer.from(bot.token).toString('base64') },
    },
    'ctl-test',
  );
  const delivery = gitops.gitDelivery({ path: 'apps/{app}/image.yaml', valuesPath: 'data.image' }) as {
    git: Record<string, unknown>;
  };
  delivery.git.pullRequest = {
    forge: 'gitea',
    apiURL: gitea.url,
    repository: `${repo.owner}/${repo.name}`,
    tokenSecretRef: { name: 'forge-token' },
  };
  await applyDevProdEnvironments(dev, { ns: NS, apps: APPS, gitops: GITOPS, source, target, delivery });
  await applyCr(
    dev,
    crs.flow(NS, 'main', [], {
      stages: [{ environment: 'dev' }, { environment: 'prod', approvalSource: 'pullRequest' }],
      selector: { applications: ['web'] },
      rolloutTimeoutSeconds: 120,
    }),
  );
  await applyCr(dev, crs.application(NS, 'web', 'team-a'));
  // rm may approve into prod (the approve verb on environments/prod); dev may not need to: they are the requester.
  await grantRole(
    dev,
    NS,
    'prod-approvers',
    [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['environments'],
        resourceNames: ['prod'],
        verbs: ['approve'],
      },
    ],
    [
      { username: 'gitea:rm', token: 'unused-rm' },
      { username: 'gitea:dev', token: 'unused-dev' },
    ],
  );

  ctl = await startController(
    controllerConfig(kubeconfig, NS, {
      leaderElection: { enabled: false },
      // One person, two identities: the requester in kpromo is dev on the forge.
      persons: { identities: { 'gitea:dev': 'dev@example.com', [TEST_ADMIN.username]: 'dev@example.com' } },
      planURL: 'https://portal.example.com/promotions/{namespace}/{name}',
    }),
    { log },
  );
});

afterAll(async () => {
  await ctl?.stop();
  await gitops?.stop();
  await gitea?.stop();
  for (const ns of [NS, APPS, GITOPS]) await deleteNs(dev, ns);
});

describe('promotion as a pull request (approvalSource pullRequest) with Gitea and Flux', () => {
  it('opens a pull request with the evidence, reports statuses, and counts the release manager’s review and merge', async () => {
    const digest = (
      await dev.get<{ spec: { template: { spec: { containers: Array<{ image: string }> } } } }>(
        `/apis/apps/v1/namespaces/${APPS}/deployments/web`,
      )
    ).spec.template.spec.containers[0].image.split('@')[1];
    await createPlan('web-1');
    const p = await withPullRequest(
      'web-1',
      (x) => x.status?.pullRequest?.state === 'open' && !!x.status.pullRequest.reviews,
    );
    const rec = p.status!.pullRequest!;
    expect(rec).toMatchObject({ forge: 'gitea', branch: 'kpromo/web-1', base: 'main', head: rec.commit });
    const pr = await as(bot).getPullRequest(repo, rec.number!);
    // The evidence a reviewer judges without leaving the forge.
    expect(pr.body).toContain('| web |');
    expect(pr.body).toContain(digest);
    expect(pr.body).toContain('requested by `kpromo-test-admin`');
    expect(pr.body).toContain('https://portal.example.com/promotions/');
    await waitFor('kpromo statuses on its commit', async () => {
      const s = await statuses(rec.commit!);
      return s['kpromo/approval'] === 'pending' && s['kpromo/gates'] === 'success' ? s : undefined;
    });
    // The plan started (copy, commit) but waits for the merge: nothing reached the environment branch.
    expect(appOf(p, 'web')).toMatchObject({ phase: 'RollingOut', copied: true, written: true });

    // The requester (dev on the forge) approves: Gitea would count it, kpromo does not (same person).
    await review(devUser, rec.number!);
    const judged = await withPullRequest(
      'web-1',
      (x) => !!x.status?.pullRequest?.reviews?.some((r) => r.login === 'dev'),
    );
    expect(judged.status?.pullRequest?.reviews?.find((r) => r.login === 'dev')).toMatchObject({
      user: 'gitea:dev',
      commit: rec.commit,
      eligible: true,
    });
    expect(judged.status?.gate?.approved).toBe(false);
    expect(judged.status?.gate?.approvers).toEqual([
      expect.objectContaining({ user: 'gitea:dev', person: 'dev@example.com', counted: false }),
    ]);
    // So kpromo/approval stays pending, and Gitea's branch protection refuses dev's merge.
    const refused = await as(devUser)
      .merge(repo, rec.number!, { sha: rec.commit!, title: 'merge', message: 'by dev' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ForgeError);
    expect((await statuses(rec.commit!))['kpromo/approval']).toBe('pending');

    // The release manager approves: kpromo counts it and reports kpromo/approval success; rm merges.
    await review(rm, rec.number!);
    await waitFor('kpromo/approval success', async () =>
      (await statuses(rec.commit!))['kpromo/approval'] === 'success' ? true : undefined,
    );
    const merged = await as(rm).merge(repo, rec.number!, { sha: rec.commit!, title: 'Promote', message: 'by rm' });
    const done = await waitPlan(dev, NS, 'web-1', (x) => x.status?.phase === 'Complete', 150_000);
    expect(done.status?.pullRequest).toMatchObject({ state: 'merged', merged: { by: 'rm', commit: merged.commit } });
    expect(done.status?.gate).toMatchObject({ approved: true });
    expect(done.status?.gate?.approvers).toEqual(
      expect.arrayContaining([expect.objectContaining({ user: 'gitea:rm', counted: true })]),
    );
    // The read model every door renders (from the plan the API serves): the link, the merge, which
    // reviews count and why the requester's does not; rm's merge is offered as rm once, by the review.
    const view = planProgress(
      (await (await callApi(ctl.port, `/api/v1/plans/${NS}/web-1`)).json()) as PromotionPlan,
    ).pullRequest;
    expect(view).toMatchObject({
      number: rec.number,
      url: pr.url,
      state: 'merged',
      branch: 'kpromo/web-1',
      base: 'main',
      merged: { by: 'rm', commit: merged.commit },
    });
    expect(view?.url).toMatch(/^https?:\/\//);
    expect(view?.reviews.map((r) => [r.login, r.merger ?? false, r.counts])).toEqual([
      ['dev', false, false],
      ['rm', false, true],
      ['rm', true, false],
    ]);
    expect(view?.reviews[0]?.why).toMatch(/creator of the plan/);
    // Flux applied the merge commit, and prod runs the promoted digest.
    const ks = await gitops.waitKustomization('web', 'applies the merge', (s) => appliedCommit(s) === merged.commit);
    expect(fluxReady(ks)?.status).toBe('True');
    const d = await getDeployment(dev, GITOPS, 'web');
    expect(d.spec?.template?.spec?.containers?.[0]?.image).toContain(digest!);
  });

  it('a commit pushed after the review invalidates it: nothing counts and kpromo reports nothing on the new head', async () => {
    await newDevVersion();
    await createPlan('web-2');
    const p = await withPullRequest('web-2', (x) => x.status?.pullRequest?.state === 'open');
    const rec = p.status!.pullRequest!;
    await review(rm, rec.number!);
    await withPullRequest('web-2', (x) => x.status?.gate?.approved === true);

    // dev pushes to kpromo's branch after the review.
    const work = mkdtempSync(join(tmpdir(), 'kpromo-pr-push-'));
    let theirs: string;
    try {
      runGit(work, '-c', 'credential.helper=', 'clone', '-q', '--branch', rec.branch, gitea.gitUrl(devUser, repo), '.');
      writeTree(work, { 'apps/web/extra.yaml': 'sneaked: in\n' });
      runGit(work, 'add', '-A');
      runGit(work, 'commit', '-q', '-m', 'after the review');
      runGit(work, '-c', 'credential.helper=', 'push', '-q', 'origin', rec.branch);
      theirs = runGit(work, 'rev-parse', 'HEAD');
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    const after = await withPullRequest('web-2', (x) => x.status?.pullRequest?.head === theirs);
    expect(after.status?.gate?.approved).toBe(false);
    expect(after.status?.pullRequest?.reviews?.find((r) => r.login === 'rm')).toMatchObject({ eligible: false });
    expect(after.status?.pullRequest?.message).toContain('someone pushed');
    // The new head has no kpromo/approval: the branch protection refuses any merge.
    expect((await statuses(theirs!))['kpromo/approval']).toBeUndefined();
    await expect(
      as(rm).merge(repo, rec.number!, { sha: theirs!, title: 'merge', message: 'by rm' }),
    ).rejects.toBeInstanceOf(ForgeError);
  });

  it('with approvalSource kpromo, kpromo merges once the plan is approved in kpromo', async () => {
    await gitea.api(
      bot,
      'PATCH',
      `/repos/${repo.owner}/${repo.name}/pulls/${(await dev.get<PromotionPlan>(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/web-2`)).status!.pullRequest!.number}`,
      { state: 'closed' },
    );
    await applyCr(
      dev,
      crs.flow(NS, 'main', [], {
        stages: [{ environment: 'dev' }, { environment: 'prod', approvalSource: 'kpromo' }],
        selector: { applications: ['web'] },
        rolloutTimeoutSeconds: 120,
      }),
    );
    // kpromo's merge must pass the same branch protection: one approval on the forge.
    await gitea.protectBranch(repo, 'main', { requiredApprovals: 0, statusContexts: ['kpromo/approval'] });
    await newDevVersion();
    await createAndApprove(ctl.port, { namespace: NS, flow: 'main', from: 'dev', to: 'prod', name: 'web-3' });
    const done = await waitPlan(dev, NS, 'web-3', (x) => x.status?.phase === 'Complete', 150_000);
    expect(done.status?.pullRequest).toMatchObject({ state: 'merged', merged: { by: 'kpromo-bot' } });
    await gitops.waitKustomization(
      'web',
      'applies kpromo’s merge',
      (s) => appliedCommit(s) === done.status!.pullRequest!.merged!.commit,
    );
  });

  it('a failed verification rolls the release back through a pull request of its own that names the failed check', async () => {
    // The new version's health endpoint answers 500: the stage's check fails at its first sample.
    const health = createServer((_req, res) => res.writeHead(500).end('unhealthy'));
    await new Promise<void>((r) => health.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(health.address() as AddressInfo).port}/health`;
      await applyCr(
        dev,
        crs.flow(NS, 'main', [], {
          stages: [
            { environment: 'dev' },
            {
              environment: 'prod',
              approvalSource: 'kpromo',
              verification: {
                checks: [{ name: 'health', http: { url } }],
                interval: '1s',
                window: '30s',
                onFailure: 'rollbackRelease',
              },
            },
          ],
          selector: { applications: ['web'] },
          rolloutTimeoutSeconds: 120,
        }),
      );
      const before = (await waitPlan(dev, NS, 'web-3', () => true)).status!.pullRequest!.merged!.commit;
      await newDevVersion();
      await createAndApprove(ctl.port, { namespace: NS, flow: 'main', from: 'dev', to: 'prod', name: 'web-4' });
      const rb = await automaticRollbackOf(dev, NS, 'web-4');
      const done = await waitPlan(dev, NS, rb.metadata.name, (x) => x.status?.phase === 'RolledBack', 150_000);
      const rec = done.status!.pullRequest!;
      expect(rec).toMatchObject({
        branch: `kpromo/${rb.metadata.name}`,
        state: 'merged',
        merged: { by: 'kpromo-bot' },
      });
      const pr = await as(bot).getPullRequest(repo, rec.number!);
      expect(pr.title).toMatch(/^Roll back/);
      expect(pr.body).toContain('**Why:** verification check `health` of web failed');
      // Flux applied the revert, and the environment branch holds again what web-3 delivered.
      await gitops.waitKustomization('web', 'applies the rollback', (s) => appliedCommit(s) === rec.merged!.commit);
      const image = async (ref: string) =>
        Buffer.from(
          (
            await gitea.api<{ content: string }>(
              bot,
              'GET',
              `/repos/${repo.owner}/${repo.name}/contents/apps/web/image.yaml?ref=${ref}`,
            )
          ).content,
          'base64',
        ).toString();
      expect(await image('main')).toBe(await image(before));
    } finally {
      health.close();
    }
  });

  it('attack: without kpromo/approval in the branch protection, the requester’s own merge is caught as MergedWithoutApproval', async () => {
    // A protection that forgot kpromo's status: Gitea lets any one approval merge.
    await gitea.protectBranch(repo, 'main', { requiredApprovals: 1 });
    await applyCr(
      dev,
      crs.flow(NS, 'main', [], {
        stages: [{ environment: 'dev' }, { environment: 'prod', approvalSource: 'pullRequest' }],
        selector: { applications: ['web'] },
        rolloutTimeoutSeconds: 120,
      }),
    );
    await newDevVersion();
    await createPlan('web-5');
    const rec = (await withPullRequest('web-5', (x) => x.status?.pullRequest?.state === 'open')).status!.pullRequest!;
    // dev, the requester's person, approves and merges: the forge allows it, kpromo does not count it.
    await review(devUser, rec.number!);
    await as(devUser).merge(repo, rec.number!, { sha: rec.commit!, title: 'merge', message: 'by dev' });
    const failed = await waitPlan(dev, NS, 'web-5', (x) => appOf(x, 'web')?.phase === 'Failed', 60_000);
    expect(appOf(failed, 'web')).toMatchObject({ reason: 'MergedWithoutApproval' });
    expect(appOf(failed, 'web')?.message).toContain('require the kpromo/approval status');
    expect(failed.status?.gate?.approved).toBe(false);
    expect(failed.status?.pullRequest?.reviews).toEqual(
      expect.arrayContaining([expect.objectContaining({ login: 'dev', merger: true, eligible: true })]),
    );
  });
});
