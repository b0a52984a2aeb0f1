import type { Environment, Stage } from '@kpromo/api';
import { GitHubStandIn, sha } from '@kpromo/test-harness/github';
import { app, env } from '@kpromo/test-harness/objects';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeKube } from '../../test/support/fakeKube.js';
import { resourcePath, SECRET } from '../kube/paths.js';
import { KubeError } from '../kube/rest.js';
import { diagnosePullRequest } from './pullRequestDiagnosis.js';

// The doctor's checks of pull-request delivery, against the GitHub stand-in (every request and answer
// checked against GitHub's OpenAPI description); the same checks against a real Gitea are in
// controller/test/doctor/pullRequest.int.test.ts.
let gh: GitHubStandIn;
let control: FakeKube;

beforeEach(async () => {
  gh = new GitHubStandIn({ 'bot-token': 'kpromo-bot' });
  await gh.start();
  gh.addRepo('acme', 'env', { branches: { main: sha('main') } });
  control = new FakeKube('control');
});
afterEach(async () => {
  await gh.stop();
  expect(gh.violations).toEqual([]);
});

const prod = (): Environment =>
  env('prod', {
    delivery: {
      method: 'git',
      git: {
        repository: 'https://g/x.git',
        path: '{app}.yaml',
        pullRequest: {
          forge: 'github',
          apiURL: gh.url,
          repository: 'acme/env',
          tokenSecretRef: { name: 'forge-token' },
        },
      },
    },
  });

function tokenSecret(o: { token?: string; labelled?: boolean } = {}) {
  control.seed(resourcePath(SECRET, 'ns', 'forge-token'), {
    metadata: {
      name: 'forge-token',
      namespace: 'ns',
      ...(o.labelled === false ? {} : { labels: { 'promotions.kpromo.dev/credential': 'true' } }),
      annotations: { 'promotions.kpromo.dev/destinations': `${gh.url}/` },
    },
    type: 'Opaque',
    data: { token: Buffer.from(o.token ?? 'bot-token').toString('base64') },
  });
}

const stage = (flow: string, approvalSource?: Stage['approvalSource']) => ({
  flow,
  stage: { environment: 'prod', ...(approvalSource ? { approvalSource } : {}) } as Stage,
});

const diagnose = (stages: ReturnType<typeof stage>[] = [], e = prod()) =>
  diagnosePullRequest({ env: e, apps: [app('cart')], stages, control: control.rest, client: () => undefined }, 'main');

const SUBJECT = 'Environment prod pull requests github acme/env';
const PROTECTION = 'Environment prod branch protection of main';
const answers = () => ({
  status: 'pass',
  subject: SUBJECT,
  message: `${gh.url} answers, the token acts as kpromo-bot`,
});

describe('doctor: delivery through pull requests', () => {
  it('passes a token the forge knows and a branch protection that requires kpromo/approval and an approval', async () => {
    tokenSecret();
    gh.protectBranch('acme', 'env', 'main', { requiredApprovals: 2, statusContexts: ['ci', 'kpromo/approval'] });
    expect(await diagnose([stage('shop', 'pullRequest')])).toEqual([
      answers(),
      {
        status: 'pass',
        subject: PROTECTION,
        message: 'requires kpromo/approval and 2 approvals (branch protection)',
      },
    ]);
  });

  it('fails a protection without kpromo/approval when a stage takes its approvals from the pull request, naming the setting', async () => {
    tokenSecret();
    gh.protectBranch('acme', 'env', 'main', { requiredApprovals: 1, statusContexts: ['ci'] });
    expect(await diagnose([stage('shop', 'pullRequest'), stage('other')])).toEqual([
      answers(),
      {
        status: 'fail',
        subject: PROTECTION,
        message:
          "does not require the status kpromo/approval: flow shop takes the approvals of prod from the pull request (approvalSource pullRequest), so the forge's merge is the approval",
        fix: `in GitHub, acme/env Settings → Branches → the branch protection rule for main (or a ruleset's rules of the same names): turn on "Require status checks to pass before merging" and add kpromo/approval (API: required_status_checks.contexts)`,
      },
    ]);
  });

  it('only warns when no stage takes its approvals from the pull request (kpromo merges), and warns of no required approval', async () => {
    tokenSecret();
    gh.protectBranch('acme', 'env', 'main', { statusContexts: ['ci'] });
    expect(await diagnose([stage('shop', 'both'), stage('other')])).toEqual([
      answers(),
      {
        status: 'warn',
        subject: PROTECTION,
        message:
          "does not require the status kpromo/approval: a person who may push could merge a promotion before kpromo's approval (kpromo then only fails the plan with MergedWithoutApproval)",
        fix: expect.stringContaining('add kpromo/approval'),
      },
      {
        status: 'warn',
        subject: PROTECTION,
        message: 'requires no approving review: the forge lets a pull request merge without one',
        fix: `in GitHub, acme/env Settings → Branches → the branch protection rule for main (or a ruleset's rules of the same names): turn on "Require a pull request before merging" with "Required approvals" of at least 1 (API: required_pull_request_reviews.required_approving_review_count)`,
      },
    ]);
  });

  it('fails an unprotected branch once, with both settings, when a stage relies on it', async () => {
    tokenSecret();
    const found = await diagnose([stage('shop', 'pullRequest'), stage('web', 'pullRequest')]);
    expect(found).toEqual([
      answers(),
      {
        status: 'fail',
        subject: PROTECTION,
        message:
          "branch main is not protected: flow shop, flow web take the approvals of prod from the pull request (approvalSource pullRequest), so the forge's merge is the approval",
        fix: expect.stringMatching(/\(add one\): turn on "Require status checks.*; turn on "Require a pull request/),
      },
    ]);
  });

  it('warns, never passes, when the token may not read the protection', async () => {
    gh.addRepo('acme', 'locked', { admins: ['alice'] });
    gh.protectBranch('acme', 'locked', 'main', { requiredApprovals: 1, statusContexts: ['kpromo/approval'] });
    tokenSecret();
    const e = prod();
    e.spec.delivery.git!.pullRequest!.repository = 'acme/locked';
    const found = await diagnose([stage('shop', 'pullRequest')], e);
    expect(found[1]).toEqual({
      status: 'warn',
      subject: PROTECTION,
      message: expect.stringMatching(
        /^could not be read as kpromo-bot: GitHub get branch protection of main .* answered 403: Resource not accessible by personal access token; flow shop takes/,
      ),
      fix: expect.stringContaining('Administration: read'),
    });
  });

  it('only warns of what is missing when the token reads the rulesets but not the branch protection rule', async () => {
    gh.addRepo('acme', 'locked', { admins: ['alice'] });
    gh.addRuleset('acme', 'locked', { branches: ['main'], requiredApprovals: 1 });
    tokenSecret();
    const e = prod();
    e.spec.delivery.git!.pullRequest!.repository = 'acme/locked';
    const found = await diagnose([stage('shop', 'pullRequest')], e);
    expect(found.slice(1)).toEqual([
      {
        status: 'warn',
        subject: PROTECTION,
        message: expect.stringMatching(
          /^does not require the status kpromo\/approval as far as kpromo-bot may read it \(not its branch protection rule \(GitHub get branch protection of main .* 403: .*\)\): flow shop takes/,
        ),
        fix: expect.stringContaining('add kpromo/approval'),
      },
    ]);
    gh.addRuleset('acme', 'locked', { branches: ['main'], statusContexts: ['kpromo/approval'] });
    expect((await diagnose([stage('shop', 'pullRequest')], e)).slice(1)).toEqual([
      { status: 'pass', subject: PROTECTION, message: 'requires kpromo/approval and 1 approval (rulesets)' },
    ]);
  });

  it('fails a token the forge refuses, and a token Secret that is missing, unlabelled or without key token', async () => {
    tokenSecret({ token: 'stale' });
    expect(await diagnose()).toEqual([
      {
        status: 'fail',
        subject: SUBJECT,
        message: expect.stringMatching(/does not answer as the token of Secret forge-token: .*401: Bad credentials/),
        fix: 'put a valid token of kpromo\'s forge user in key "token" of Secret forge-token',
      },
    ]);

    control.objects.clear();
    const missing = await diagnose();
    expect(missing).toEqual([
      {
        status: 'fail',
        subject: SUBJECT,
        message: expect.stringContaining('Secret ns/forge-token (spec.delivery.git.pullRequest.tokenSecretRef'),
        fix: expect.stringContaining('labelled promotions.kpromo.dev/credential=true'),
      },
    ]);

    tokenSecret({ labelled: false });
    expect((await diagnose())[0].message).toContain('is not marked as a credential kpromo may send');
    tokenSecret({ token: ' ' });
    expect((await diagnose())[0].message).toContain('has no key "token"');
    // No forge call was made with a Secret kpromo would not send.
    expect(gh.callCount(/GET \/user/)).toBe(1);
  });

  it('warns when you may not read the token Secret, and checks nothing further', async () => {
    const forbidden = {
      getOrUndefined: async () => {
        throw new KubeError(
          403,
          'Forbidden',
          'GET',
          '/api/v1/namespaces/ns/secrets/forge-token',
          'control',
          'forbidden',
        );
      },
    } as unknown as FakeKube['rest'];
    const found = await diagnosePullRequest(
      { env: prod(), apps: [], stages: [], control: forbidden, client: () => undefined },
      'main',
    );
    expect(found).toEqual([
      {
        status: 'warn',
        subject: SUBJECT,
        message: expect.stringMatching(/^you may not read its token Secret forge-token/),
      },
    ]);
    expect(gh.calls).toEqual([]);
  });

  it('checks nothing for an Environment that commits straight to its branch', async () => {
    const direct = env('prod', { delivery: { method: 'git', git: { repository: 'https://g/x.git', path: 'a.yaml' } } });
    expect(await diagnose([], direct)).toEqual([]);
  });
});
