import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Environment } from '@kpromo/api';
import { app, env } from '@kpromo/test-harness/objects';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeKube } from '../../../test/support/fakeKube.js';
import type { AdoptedContainer, FoundEnvironment } from '../../extension/adoption.js';
import { KUSTOMIZATION, resourcePath } from '../../kube/paths.js';
import { gitDelivery } from './git.js';

type Git = NonNullable<Environment['spec']['delivery']['git']>;
const prod = (git: Partial<Git> = {}) =>
  env('prod', { delivery: { method: 'git', git: { repository: 'https://g/x.git', path: '{app}.yaml', ...git } } });

describe('delivery.method git', () => {
  it("accessNeeds: get on its Kustomization when Flux runs in the Environment's cluster, else nothing", () => {
    const needs = (git: Partial<Git>) => gitDelivery.accessNeeds!({ env: prod(git), workloadKinds: [] });
    // It writes nothing in the cluster (Flux applies the commit).
    expect(needs({})).toEqual([]);
    expect(needs({ kustomization: { name: 'apps' } })).toEqual([
      { verb: 'get', group: 'kustomize.toolkit.fluxcd.io', resource: 'kustomizations', namespace: 'flux-system' },
    ]);
    // In the control cluster it is read with the controller's control-cluster rights.
    expect(needs({ kustomization: { name: 'apps', cluster: 'control' } })).toEqual([]);
  });

  describe('diagnose', () => {
    // A local repository with one commit on main: what git ls-remote answers for, nothing cloned.
    const dir = mkdtempSync(join(tmpdir(), 'kpromo-git-diagnose-'));
    const repo = join(dir, 'repo');
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
    let head = '';
    beforeAll(() => {
      git('init', '-q', '-b', 'main', repo);
      git(
        '-C',
        repo,
        '-c',
        'user.name=t',
        '-c',
        'user.email=t@example.com',
        'commit',
        '-q',
        '--allow-empty',
        '-m',
        'i',
      );
      head = git('-C', repo, 'rev-parse', 'HEAD').slice(0, 12);
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const control = new FakeKube('control');
    const cluster = new FakeKube('prod');
    const diagnose = (g: Partial<Git>) =>
      gitDelivery.diagnose!({
        env: prod(g),
        apps: [app('cart')],
        stages: [],
        control: control.rest,
        client: () => cluster.rest,
      });
    const subject = `Environment prod git ${repo}`;

    it('passes a branch the repository has, naming its commit', async () => {
      expect(await diagnose({ repository: repo })).toEqual([
        { status: 'pass', subject, message: `branch main at ${head}` },
      ]);
    });

    it('fails a branch it lacks, and a repository that does not answer, each with its fix', async () => {
      expect(await diagnose({ repository: repo, branch: 'release' })).toEqual([
        {
          status: 'fail',
          subject,
          message: 'the repository has no branch release',
          fix: 'fix delivery.git.branch of Environment prod, or push the branch',
        },
      ]);
      const gone = join(dir, 'gone');
      expect(await diagnose({ repository: gone })).toEqual([
        {
          status: 'fail',
          subject: `Environment prod git ${gone}`,
          message: expect.stringContaining('git ls-remote failed'),
          fix: expect.stringContaining(
            'check delivery.git.repository and the Secret named by delivery.git.credentialsSecretRef',
          ),
        },
      ]);
    });

    it('warns when its credentials Secret cannot be used here, and tries without', async () => {
      expect(await diagnose({ repository: repo, credentialsSecretRef: { name: 'git-creds' } })).toEqual([
        {
          status: 'warn',
          subject,
          message: `branch main at ${head} (its credentials Secret could not be used here: Secret ns/git-creds (git credentials (username, password)) not found (Environment prod delivery.git); tried without)`,
        },
      ]);
    });

    it('through pull requests, also checks the forge and its token Secret (pullRequestDiagnosis.ts)', async () => {
      const pullRequest = {
        forge: 'gitea' as const,
        apiURL: 'https://gitea.example.com',
        repository: 'platform/gitops',
        tokenSecretRef: { name: 'forge-token' },
      };
      expect(await diagnose({ repository: repo, pullRequest })).toEqual([
        { status: 'pass', subject, message: `branch main at ${head}` },
        {
          status: 'fail',
          subject: 'Environment prod pull requests gitea platform/gitops',
          message: expect.stringContaining('Secret ns/forge-token (spec.delivery.git.pullRequest.tokenSecretRef'),
          fix: expect.stringContaining('key "token"'),
        },
      ]);
    });

    it('checks an Environment-wide Kustomization in its cluster; one per app is left to the promotion', async () => {
      cluster.seed(resourcePath(KUSTOMIZATION, 'flux-system', 'apps-prod'), {
        metadata: { name: 'apps-prod', namespace: 'flux-system' },
      });
      expect(await diagnose({ repository: repo, kustomization: { name: 'apps-{environment}' } })).toEqual([
        { status: 'pass', subject, message: `branch main at ${head}` },
        { status: 'pass', subject: 'Environment prod Kustomizations', message: '1 found: apps-prod' },
      ]);
      expect(await diagnose({ repository: repo, kustomization: { name: '{app}' } })).toHaveLength(1);
    });
  });

  describe('infer', () => {
    const ks = (name: string, namespace?: string) => ({
      'kustomize.toolkit.fluxcd.io/name': name,
      ...(namespace ? { 'kustomize.toolkit.fluxcd.io/namespace': namespace } : {}),
    });
    const container = (labels: Record<string, string>) =>
      ({
        workload: { labels },
        host: 'r',
        repository: 'shop/cart',
        application: 'cart',
      }) as unknown as AdoptedContainer;
    const found = (kustomizations: FoundEnvironment['kustomizations']) =>
      ({ name: 'dev', kustomizations }) as unknown as FoundEnvironment;

    it('recognises workloads a Flux Kustomization applies (its labels), as what manages them', () => {
      expect(gitDelivery.infer).toMatchObject({ evidence: 'manages', by: 'Flux Kustomizations' });
      expect(gitDelivery.infer!.recognises(container(ks('apps')), found([]))).toBe(true);
      expect(gitDelivery.infer!.recognises(container({}), found([]))).toBe(false);
    });

    it("proposes the repository and directory of most workloads' Kustomization, always for review", () => {
      const apps = {
        name: 'apps',
        namespace: 'flux-system',
        path: './clusters/dev/',
        git: { url: 'https://g/shop.git' },
      };
      const r = gitDelivery.infer!.propose({
        found: found([apps]),
        containers: [container(ks('apps')), container(ks('apps', 'flux-system')), container(ks('other', 'team'))],
      });
      expect(r).toEqual({
        delivery: {
          method: 'git',
          git: {
            repository: 'https://g/shop.git',
            path: 'clusters/dev/{app}.yaml',
            kustomization: { name: 'apps', namespace: 'flux-system' },
          },
        },
        undecided: [
          "applied by Flux Kustomization flux-system/apps from https://g/shop.git: check delivery.git.path, the file holding each app's image (proposed clusters/dev/{app}.yaml), and add credentialsSecretRef",
        ],
        incomplete: true,
      });
      // A Kustomization discovery could not read: a placeholder repository.
      expect(gitDelivery.infer!.propose({ found: found([]), containers: [container(ks('apps'))] }).delivery).toEqual({
        method: 'git',
        git: {
          repository: 'https://git.example.com/CHANGE-ME.git',
          path: '{app}.yaml',
          kustomization: { name: 'apps', namespace: 'flux-system' },
        },
      });
    });
  });
});
