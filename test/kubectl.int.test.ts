import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OVERRIDE_REASON_REQUIRED, OVERRIDE_REASON_TOO_SHORT } from '@kpromo/api';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { kubectlPath } from './cluster/kubectl.js';
import { needComponents } from './cluster/need.js';
import { REPO_ROOT, versions } from './cluster/paths.js';
import { kubectl as kubectlAs } from './controller/e2e.js';
import { kubeConfigFor } from './kube.js';
import { applyCrds, loadYaml } from './manifests.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('kubectl');

/**
 * A person at a terminal: kubectl built from k8s.io/kubernetes/cmd/kubectl at the clusters' version
 * (test/cluster/kubectl.sh), run against the dev cluster as the README examples run it.
 */
const NS = `kubectl-${Math.random().toString(36).slice(2, 7)}`;
const kubeconfig = inject('kubeconfig');
const SAMPLES = join(REPO_ROOT, 'examples/samples');
let bin: string | undefined;

/** Runs kubectl against the dev context (never throws on exit ≠ 0: the test reads the refusal). */
const kubectl = (...args: string[]) => kubectlAs(kubeconfig, '--context', 'dev', ...args);
/** kubectl that must succeed; its stdout. */
async function ok(...args: string[]): Promise<string> {
  const r = await kubectl(...args);
  expect(r.code, `kubectl ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

const names = (file: string) => loadYaml(join(SAMPLES, file)).map((d) => d.metadata?.name as string);

beforeAll(async () => {
  bin = kubectlPath((s) => console.log(s));
  // The kpromo CRDs and the approval admission policy, as `kubectl apply -f examples/crds -f examples/deploy/admission-policy.yaml` would.
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ok('create', 'namespace', NS);
});

afterAll(async () => {
  if (bin) await kubectl('delete', 'namespace', NS, '--wait=false');
});

describe('kubectl as a user of kpromo', () => {
  it('is the pinned build: client and server both report K8S_VERSION', async () => {
    const v = JSON.parse(await ok('version', '-o', 'json')) as {
      clientVersion: { gitVersion: string };
      serverVersion: { gitVersion: string };
    };
    expect(v.clientVersion.gitVersion).toBe(versions().K8S_VERSION);
    expect(v.serverVersion.gitVersion).toBe(versions().K8S_VERSION);
  });

  it('kubectl apply -f examples/samples creates the CRs; kubectl get lists them, as JSON and with the printer columns', async () => {
    const out = await ok(
      'apply',
      '-n',
      NS,
      '-f',
      join(SAMPLES, 'applications.yaml'),
      '-f',
      join(SAMPLES, 'environments.yaml'),
      '-f',
      join(SAMPLES, 'flow.yaml'),
    );
    for (const n of names('applications.yaml')) expect(out).toContain(`application.promotions.kpromo.dev/${n} created`);
    for (const n of names('environments.yaml')) expect(out).toContain(`environment.promotions.kpromo.dev/${n} created`);

    const list = JSON.parse(await ok('get', 'applications.promotions.kpromo.dev', '-n', NS, '-o', 'json')) as {
      kind: string;
      items: Array<{ metadata: { name: string }; spec: { owner: string } }>;
    };
    expect(list.kind).toBe('List');
    expect(list.items.map((i) => i.metadata.name).sort()).toEqual(names('applications.yaml').sort());
    expect(list.items.find((i) => i.metadata.name === 'checkout')?.spec.owner).toBe('team-payments');

    // The short name and the CRD's printer columns (Owner from .spec.owner).
    const table = (await ok('get', 'papp', 'checkout', '-n', NS)).trim().split('\n');
    expect(table[0].split(/\s+/)).toEqual(expect.arrayContaining(['NAME', 'OWNER']));
    const col = table[0].split(/\s+/).indexOf('OWNER');
    expect(table[1].split(/\s+/)[col]).toBe('team-payments');
  });

  it('kubectl auth can-i answers for a restricted user bound to the example developer role', async () => {
    // examples/deploy/rbac-examples.yaml's kpromo-developer rules, as a Role in this namespace only
    // (its cluster-wide names would collide with a chart release in the same cluster).
    const developer = loadYaml(join(REPO_ROOT, 'examples/deploy/rbac-examples.yaml')).find(
      (d) => d.kind === 'ClusterRole' && d.metadata?.name === 'kpromo-developer',
    );
    expect(developer).toBeDefined();
    const file = join(mkdtempSync(join(tmpdir(), 'kpromo-kubectl-')), 'rbac.yaml');
    writeFileSync(
      file,
      [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'kpromo-developer', namespace: NS },
          rules: developer?.rules,
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'kpromo-developers', namespace: NS },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'kpromo-developer' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'shop-developers' }],
        },
      ]
        .map((d) => stringify(d))
        .join('---\n'),
    );
    await ok('apply', '-f', file);

    const canI = async (...what: string[]) => {
      const r = await kubectl('auth', 'can-i', ...what, '-n', NS, '--as', 'alice', '--as-group', 'shop-developers');
      return `${r.code}:${r.stdout.trim()}`;
    };
    expect(await canI('approve', 'environments/stable')).toBe('0:yes');
    expect(await canI('approve', 'environments/prod')).toBe('1:no');
    expect(await canI('create', 'promotionplans.promotions.kpromo.dev')).toBe('0:yes');
    expect(await canI('delete', 'applications.promotions.kpromo.dev')).toBe('1:no');
    // Someone outside the group holds nothing here.
    const r = await kubectl('auth', 'can-i', 'approve', 'environments/stable', '-n', NS, '--as', 'mallory');
    expect(`${r.code}:${r.stdout.trim()}`).toBe('1:no');
  });

  it('kubectl explain shows a kpromo field with the description from the CRD schema', async () => {
    const out = await ok('explain', 'applications.spec.owner', '--api-version=promotions.kpromo.dev/v1alpha1');
    expect(out).toMatch(/GROUP:\s+promotions\.kpromo\.dev/);
    expect(out).toMatch(/FIELD:\s+owner <string>/);
    expect(out).toContain('Owning team (Backstage group / Port team).');
  });

  it('kubectl patch approves a plan in your own name and by its uid; the admission policy refuses another name or no uid', async () => {
    await ok('apply', '-n', NS, '-f', join(SAMPLES, 'plan.yaml'));
    const me = await ok('auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}');
    expect(me).not.toBe('');
    const uid = await ok('get', 'pplan', 'shop-stable-to-prod', '-n', NS, '-o', 'jsonpath={.metadata.uid}');
    const approve = (user: string, planUID = uid) =>
      kubectl(
        'patch',
        'pplan',
        'shop-stable-to-prod',
        '-n',
        NS,
        '--type',
        'json',
        '-p',
        JSON.stringify([{ op: 'add', path: '/spec/approvals', value: [{ user, planUID }] }]),
      );
    // alice (example developer role: she may create plans) names someone else as approver. (The
    // admin running these tests is also the controller identity applyCrds installs, whom admission
    // lets record someone else, so the forgery is tried as her.)
    const forgedFile = join(mkdtempSync(join(tmpdir(), 'kpromo-kubectl-')), 'forged.yaml');
    writeFileSync(
      forgedFile,
      stringify({
        apiVersion: 'promotions.kpromo.dev/v1alpha1',
        kind: 'PromotionPlan',
        metadata: { name: 'forged', namespace: NS },
        spec: { flow: 'shop', from: 'stable', to: 'prod', candidates: [], approvals: [{ user: 'someone-else' }] },
      }),
    );
    const forged = await kubectl('create', '-f', forgedFile, '--as', 'alice', '--as-group', 'shop-developers');
    expect(forged.code).toBe(1);
    expect(forged.stderr).toContain('must name the requesting user');
    // An approval must say which plan it approves: its uid (what `kubectl get` showed).
    const unbound = await approve(me, '');
    expect(unbound.code).toBe(1);
    expect(unbound.stderr).toContain(`set planUID to ${uid}`);
    const mine = await approve(me);
    expect(mine.code, mine.stderr).toBe(0);
    const approvals = await ok(
      'get',
      'pplan',
      'shop-stable-to-prod',
      '-n',
      NS,
      '-o',
      'jsonpath={.spec.approvals[*].user}',
    );
    expect(approvals).toBe(me);
  });

  it('kubectl apply of a plan whose approval overrides the freeze without a reason is refused by the CRD, naming overrideReason', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kpromo-kubectl-'));
    const planFile = (name: string, approval: object) => {
      const file = join(dir, `${name}.yaml`);
      writeFileSync(
        file,
        stringify({
          apiVersion: 'promotions.kpromo.dev/v1alpha1',
          kind: 'PromotionPlan',
          metadata: { name, namespace: NS },
          spec: { flow: 'shop', from: 'stable', to: 'prod', candidates: [], approvals: [approval] },
        }),
      );
      return file;
    };
    const me = await ok('auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}');
    const refused = await kubectl('apply', '-f', planFile('hotfix', { user: me, overrideFreeze: true }));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`overrideReason ${OVERRIDE_REASON_REQUIRED}`);
    const short = await kubectl(
      'apply',
      '-f',
      planFile('hotfix', { user: me, overrideFreeze: true, overrideReason: 'hotfix' }),
    );
    expect(short.code).toBe(1);
    expect(short.stderr).toContain(`overrideReason ${OVERRIDE_REASON_TOO_SHORT}`);
    const why = 'INC-42: checkout 5xx, the fix ships now';
    await ok('apply', '-f', planFile('hotfix', { user: me, overrideFreeze: true, overrideReason: why }));
    expect(await ok('get', 'pplan', 'hotfix', '-n', NS, '-o', 'jsonpath={.spec.approvals[0].overrideReason}')).toBe(
      why,
    );
  });
});
