// `kpromo doctor`'s checks of delivery through pull requests (the git method's diagnose) against a real
// Gitea (built from its Go module): the token's user, and whether the environment branch's protection
// requires kpromo/approval and an approval, as Gitea itself applies its rules (glob rules and status
// check patterns included) and as a token of the repository's owner or of a writer reads them. The
// Environment's token Secret is read from an in-memory control cluster: the Secret rules are unit
// tested (controller/src/delivery/pullRequestDiagnosis.test.ts).
import type { Environment, Stage } from '@kpromo/api';
import { type Gitea, type GiteaUser, needComponents, startGitea } from '@kpromo/test-harness';
import { app, env } from '@kpromo/test-harness/objects';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitDelivery } from '../../src/delivery/methods/git.js';
import { resourcePath, SECRET } from '../../src/kube/paths.js';
import { FakeKube } from '../support/fakeKube.js';

await needComponents('gitea');

let gitea: Gitea;
let bot: GiteaUser;
let owner: GiteaUser;
let repos = 0;

beforeAll(async () => {
  gitea = await startGitea();
  bot = await gitea.createUser('kpromo-bot');
  owner = await gitea.createUser('platform');
});
afterAll(async () => {
  await gitea?.stop();
});

/** A repository of `by`'s with one commit on main; the bot writes to it when it is not the owner. */
async function repository(by: GiteaUser) {
  const r = await gitea.createRepo(by, `gitops-${++repos}`, { files: { 'apps/web.yaml': 'image: web:1\n' } });
  const repo = { owner: r.owner, name: r.name };
  if (by !== bot) await gitea.addCollaborator(repo, bot.login, 'write');
  return { ...repo, head: r.head };
}

/** Runs the git method's diagnose for Environment prod promoting into `repo` through pull requests. */
async function doctor(
  repo: { owner: string; name: string },
  approvalSource?: Stage['approvalSource'],
  token = bot.token,
) {
  const control = new FakeKube('control');
  control.seed(resourcePath(SECRET, 'ns', 'forge-token'), {
    metadata: {
      name: 'forge-token',
      namespace: 'ns',
      labels: { 'promotions.kpromo.dev/credential': 'true' },
      annotations: { 'promotions.kpromo.dev/destinations': `${gitea.url}/` },
    },
    type: 'Opaque',
    data: { token: Buffer.from(token).toString('base64') },
  });
  const prod: Environment = env('prod', {
    delivery: {
      method: 'git',
      git: {
        repository: `${gitea.url}/${repo.owner}/${repo.name}.git`,
        path: 'apps/{app}.yaml',
        pullRequest: {
          forge: 'gitea',
          apiURL: gitea.url,
          repository: `${repo.owner}/${repo.name}`,
          tokenSecretRef: { name: 'forge-token' },
        },
      },
    },
  });
  return gitDelivery.diagnose!({
    env: prod,
    apps: [app('web')],
    stages: [{ flow: 'shop', stage: { environment: 'prod', ...(approvalSource ? { approvalSource } : {}) } }],
    control: control.rest,
    client: () => undefined,
  });
}

const PROTECTION = 'Environment prod branch protection of main';

describe('doctor: pull-request delivery against a real Gitea', () => {
  it('fails a token Gitea refuses, and one without the scope to read its own user, naming the fix', async () => {
    const repo = await repository(bot);
    const subject = `Environment prod pull requests gitea ${repo.owner}/${repo.name}`;
    expect((await doctor(repo, 'pullRequest', 'not-a-token'))[1]).toEqual({
      status: 'fail',
      subject,
      message: expect.stringMatching(/does not answer as the token of Secret forge-token: gitea .*: 401/),
      fix: 'put a valid token of kpromo\'s forge user in key "token" of Secret forge-token',
    });
    const narrow = await gitea.createUser('narrow-bot', { scopes: ['write:repository', 'write:issue'] });
    expect((await doctor(repo, 'pullRequest', narrow.token))[1]).toEqual({
      status: 'fail',
      subject,
      message: expect.stringMatching(/: 403 /),
      fix: expect.stringContaining('(Gitea: scope read:user)'),
    });
  });

  it('fails an unprotected branch when the stage takes its approvals from the pull request, then passes once the rule requires kpromo/approval and an approval', async () => {
    const repo = await repository(bot);
    const first = await doctor(repo, 'pullRequest');
    expect(first.map((d) => [d.status, d.subject])).toEqual([
      ['pass', `Environment prod git ${gitea.url}/${repo.owner}/${repo.name}.git`],
      ['pass', `Environment prod pull requests gitea ${repo.owner}/${repo.name}`],
      ['fail', PROTECTION],
    ]);
    expect(first[1].message).toBe(`${gitea.url} answers, the token acts as kpromo-bot`);
    expect(first[2]).toMatchObject({
      message: expect.stringMatching(/^branch main is not protected: flow shop takes the approvals of prod/),
      fix: expect.stringContaining('"Enable Status Check" and add kpromo/approval to "Status check patterns"'),
    });

    // A rule without the status: still a failure, naming the setting; no approval required: a warning.
    await gitea.protectBranch(repo, 'main', { statusContexts: ['ci/build'] });
    expect((await doctor(repo, 'pullRequest')).slice(2)).toEqual([
      expect.objectContaining({ status: 'fail', message: expect.stringContaining('does not require the status') }),
      expect.objectContaining({ status: 'warn', fix: expect.stringContaining('"Required approvals" of at least 1') }),
    ]);

    await gitea.protectBranch(repo, 'main', { requiredApprovals: 1, statusContexts: ['kpromo/approval'] });
    expect((await doctor(repo, 'pullRequest')).slice(2)).toEqual([
      // The bot owns the repository: Gitea names the rule to it.
      { status: 'pass', subject: PROTECTION, message: 'requires kpromo/approval and 1 approval (rule main)' },
    ]);
  });

  it('judges the rule Gitea applies (a glob rule, a status check pattern) as a writer reads it, and only warns when kpromo approves', async () => {
    const repo = await repository(owner);
    await gitea.protectBranch(repo, 'ma*', { requiredApprovals: 2, statusContexts: ['kpromo/*'] });
    expect((await doctor(repo, 'pullRequest')).slice(2)).toEqual([
      // A writer is not told the rule's name.
      { status: 'pass', subject: PROTECTION, message: 'requires kpromo/approval and 2 approvals' },
    ]);

    await gitea.protectBranch(repo, 'ma*', { requiredApprovals: 1, statusContexts: ['kpromo/gates'] });
    expect((await doctor(repo)).slice(2)).toEqual([
      expect.objectContaining({
        status: 'warn',
        message: expect.stringMatching(
          /^does not require the status kpromo\/approval: a person who may push could merge/,
        ),
      }),
    ]);
  });
});
