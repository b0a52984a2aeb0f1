// The built `kpromo` bundle (cli/dist/kpromo.mjs, plain node) against the local clusters: a real
// controller promotes what the CLI plans and approves, and the CLI's users are real kubeconfig
// identities (the harness admin, and ServiceAccount tokens with and without a viewer Role).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PromotionPlan } from '@kpromo/api';
import type { ApplicationView } from '@kpromo/contract';
import { type Running, startController } from '@kpromo/controller';
import { applyCrds, kubeConfigFor, REPO_ROOT } from '@kpromo/test-harness';
import {
  controllerConfig,
  deleteNs,
  deploymentImage,
  ensureNs,
  getPlan,
  restFor,
  seedTwoStageRelease,
  serviceAccountKubeconfig,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `cli-${RUN}`;
const APPS_NS = `cli-apps-${RUN}`;
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const BUNDLE = join(REPO_ROOT, 'cli/dist/kpromo.mjs');
const tmp = mkdtempSync(join(tmpdir(), 'kpromo-cli-'));

let ctl: Running;
let seeded: Awaited<ReturnType<typeof seedTwoStageRelease>>;
let viewerKubeconfig: string;
let nobodyKubeconfig: string;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end without blocking this process (the in-process controller keeps running). */
function run(command: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: tmp,
      env: { ...process.env, KUBECONFIG: kubeconfig, NODE_OPTIONS: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `node cli/dist/kpromo.mjs …` as the harness admin, or as the user of another kubeconfig. */
const kpromo = (args: string[], as = kubeconfig) => run(process.execPath, [BUNDLE, ...args], { KUBECONFIG: as });

/** A failure is one line on stderr, never a stack trace. */
function oneLineError(r: Run): string {
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^error: /);
  return lines[0];
}

beforeAll(async () => {
  const build = spawnSync('yarn', ['build', 'cli'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
  expect(build.status, build.stderr || build.stdout).toBe(0);
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, NS);
  seeded = await seedTwoStageRelease({
    dev,
    stable,
    ns: NS,
    appsNs: APPS_NS,
    source,
    target,
    repo: `cli${RUN}`,
    apps: ['cart', 'web'],
    newTag: 'v2.0.0',
    oldTag: 'v1.0.0',
    seed: `cli-${RUN}`,
    applications: { owner: (app) => (app === 'cart' ? 'team-shop' : 'team-web') },
  });
  ctl = await startController(controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false } }));
  // The viewer reads every kpromo kind (the chart's viewer role) and holds no release verb.
  await dev.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'kpromo-viewer', namespace: NS },
    rules: [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['applications', 'environments', 'promotionflows', 'promotionplans', 'notifications'],
        verbs: ['get', 'list', 'watch'],
      },
    ],
  });
  await dev.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'kpromo-viewer', namespace: NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'kpromo-viewer' },
    subjects: [{ kind: 'ServiceAccount', name: 'cli-viewer', namespace: NS }],
  });
  viewerKubeconfig = await serviceAccountKubeconfig(kubeconfig, NS, 'cli-viewer');
  nobodyKubeconfig = await serviceAccountKubeconfig(kubeconfig, NS, 'cli-nobody');
});

afterAll(async () => {
  await ctl?.stop().catch(() => undefined);
  await deleteNs(dev, NS);
  for (const c of [dev, stable]) await deleteNs(c, APPS_NS);
  rmSync(tmp, { recursive: true, force: true });
});

describe('kpromo (the built CLI) against the local clusters', () => {
  it('apps: a table of what runs in every environment; -o json and -o yaml are the API answer', async () => {
    // A generous --sync-timeout: on a loaded machine listing the workloads may take a while.
    const table = await kpromo(['apps', '-n', NS, '--sync-timeout', '120s']);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0].split(/\s{3,}/)).toEqual(['NAME', 'OWNER', 'DEV', 'STABLE']);
    expect(lines.slice(1).map((l) => l.split(/\s+/))).toEqual([
      ['cart', 'team-shop', 'v2.0.0', 'v1.0.0'],
      ['web', 'team-web', 'v2.0.0', 'v1.0.0'],
    ]);

    const json = await kpromo(['apps', '-n', NS, '-o', 'json', '--teams', 'team-shop', '--sync-timeout', '120s']);
    expect(json.code, json.stderr).toBe(0);
    const list = JSON.parse(json.stdout) as { items: ApplicationView[]; total: number };
    expect(list.total).toBe(1);
    expect(list.items.map((a) => [a.name, a.owner])).toEqual([['cart', 'team-shop']]);
    expect(list.items[0].versions.find((v) => v.environment === 'dev')).toMatchObject({
      tag: 'v2.0.0',
      digest: seeded.devDigest.cart,
      health: 'Healthy',
    });

    const yaml = await kpromo(['apps', '-n', NS, '-o', 'yaml', '--teams', 'team-shop', '--sync-timeout', '120s']);
    expect(yaml.code, yaml.stderr).toBe(0);
    expect(parseYaml(yaml.stdout)).toEqual(list);
  });

  it('diff dev stable: the release candidates with the version each replaces', async () => {
    const r = await kpromo(['diff', 'dev', 'stable', '-n', NS]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('Flow main: dev → stable');
    expect(lines[1].split(/\s{3,}/)).toEqual(['APPLICATION', 'IN STABLE', 'CANDIDATE', 'DIGEST']);
    expect(lines.slice(2).map((l) => l.split(/\s+/).slice(0, 3))).toEqual([
      ['cart', 'v1.0.0', 'v2.0.0'],
      ['web', 'v1.0.0', 'v2.0.0'],
    ]);
  });

  it('plan create, approve (by the uid shown; a stale uid is exit 5) and watch: the controller promotes it and watch exits 0 on Complete', async () => {
    const created = await kpromo(['plan', 'create', 'dev', 'stable', '-n', NS, '--name', 'cli-p1', '--apps', 'cart']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain(`promotionplan ${NS}/cli-p1 created: 1 application(s) dev → stable`);
    const p = await getPlan(dev, NS, 'cli-p1');
    expect(created.stdout).toContain(`approve with: kpromo plan approve cli-p1 -n ${NS} --uid ${p.metadata.uid}`);
    expect(p.spec.requestedBy).toBe('kpromo-admin');
    expect(p.spec.candidates.map((c) => [c.application, c.from.digest])).toEqual([['cart', seeded.devDigest.cart]]);

    const again = await kpromo(['plan', 'create', 'dev', 'stable', '-n', NS, '--name', 'cli-p1', '--apps', 'cart']);
    expect(again.code, again.stderr).toBe(5);
    expect(oneLineError(again)).toBe(`error: PromotionPlan ${NS}/cli-p1 already exists`);

    // The uid of a plan that is no longer there (recreated since it was reviewed) is a conflict.
    const stale = await kpromo([
      'plan',
      'approve',
      'cli-p1',
      '-n',
      NS,
      '--uid',
      '00000000-0000-4000-8000-000000000000',
    ]);
    expect(stale.code, stale.stderr).toBe(5);
    expect(oneLineError(stale)).toContain(`PromotionPlan ${NS}/cli-p1 changed since you opened it`);
    const approved = await kpromo(['plan', 'approve', 'cli-p1', '-n', NS, '--uid', p.metadata.uid!]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout.trim()).toBe(`promotionplan ${NS}/cli-p1 approved by kpromo-admin`);

    // Not a terminal (a pipe): one line per change, ending with the plan Complete.
    const watched = await kpromo(['plan', 'watch', 'cli-p1', '-n', NS, '--timeout', '150s']);
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).not.toContain('\x1b');
    expect(watched.stdout).toMatch(
      new RegExp(`^\\d\\d:\\d\\d:\\d\\d promote ${NS}/cli-p1 dev → stable: Complete \\(1/1 succeeded\\)$`, 'm'),
    );
    expect(watched.stdout).toMatch(/^\d\d:\d\d:\d\d cart Succeeded v1\.0\.0 → v2\.0\.0/m);
    expect(await deploymentImage(stable, APPS_NS, 'cart')).toContain(seeded.devDigest.cart);

    const listed = await kpromo(['plan', 'list', '-n', NS]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^cli-p1\s+promote\s+dev\s+stable\s+Complete\s+1\/1\s+kpromo-admin\s+\d+[smh]$/m);

    const got = await kpromo(['plan', 'get', 'cli-p1', '-n', NS, '-o', 'json']);
    expect(got.code, got.stderr).toBe(0);
    expect((JSON.parse(got.stdout) as PromotionPlan).status?.phase).toBe('Complete');
  });

  it('plan rollback --approve --watch: restores the previous version and exits 0 once RolledBack', async () => {
    // The plan as reviewed (plan get -o json): the rollback is bound to its uid.
    const uid = (await getPlan(dev, NS, 'cli-p1')).metadata.uid ?? '';
    const r = await kpromo([
      'plan',
      'rollback',
      'cli-p1',
      '-n',
      NS,
      '--approve',
      '--uid',
      uid,
      '--watch',
      '--timeout',
      '150s',
    ]);
    expect(r.code, r.stderr).toBe(0);
    // Its name is generated (a squatted cli-p1-rollback blocks nothing) and printed.
    const name = new RegExp(
      `promotionplan ${NS}/(cli-p1-rollback-[a-z0-9]{5}) created: rolls back cli-p1 in stable`,
    ).exec(r.stdout)?.[1];
    expect(name, r.stdout).toBeDefined();
    expect(r.stdout).toMatch(new RegExp(`rollback ${NS}/${name} dev → stable: RolledBack`));
    expect((await getPlan(dev, NS, name ?? '')).spec.approvals?.map((a) => a.user)).toEqual(['kpromo-admin']);
    expect(await deploymentImage(stable, APPS_NS, 'cart')).toContain(seeded.stableOld.cart);
  });

  it('plan approve without --uid (approving whatever holds the name now) is refused before anything is asked (exit 2, names --uid)', async () => {
    const created = await kpromo(['plan', 'create', 'dev', 'stable', '-n', NS, '--name', 'cli-blind', '--apps', 'web']);
    expect(created.code, created.stderr).toBe(0);
    const blind = await kpromo(['plan', 'approve', 'cli-blind', '-n', NS]);
    expect(blind.code).toBe(2);
    expect(oneLineError(blind)).toBe(
      'error: invalid arguments: uid: is required: send the metadata.uid of the plan you reviewed (GET /plans/{namespace}/{name}, `kpromo plan get <name> -o json`, or the uid returned when it was created); the approval binds to that plan',
    );
    expect((await getPlan(dev, NS, 'cli-blind')).spec.approvals).toBeUndefined();
    await dev.delete(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/cli-blind`);
  });

  it('as a viewer without the approve verb: reads work, approving is forbidden (exit 3, one line)', async () => {
    const created = await kpromo(['plan', 'create', 'dev', 'stable', '-n', NS, '--name', 'cli-p2', '--apps', 'web']);
    expect(created.code, created.stderr).toBe(0);
    // No -n: the namespace of the viewer's kubeconfig context.
    const read = await kpromo(['plan', 'get', 'cli-p2'], viewerKubeconfig);
    expect(read.code, read.stderr).toBe(0);
    expect(read.stdout).toContain(`promote ${NS}/cli-p2 dev → stable: Pending`);

    const uid = (await getPlan(dev, NS, 'cli-p2')).metadata.uid!;
    const denied = await kpromo(['plan', 'approve', 'cli-p2', '--uid', uid], viewerKubeconfig);
    expect(denied.code, denied.stderr).toBe(3);
    expect(oneLineError(denied)).toBe(
      `error: forbidden: system:serviceaccount:${NS}:cli-viewer may not approve plans into environment stable in namespace ${NS} (Kubernetes RBAC: needs verb approve on environments/stable or on promotionplans)`,
    );
    expect((await getPlan(dev, NS, 'cli-p2')).spec.approvals).toBeUndefined();
  });

  it('where the workloads cannot be read: apps shows what it knows and warns; diff refuses (exit 1)', async () => {
    // The viewer may not list Deployments in dev, and its kubeconfig has no context "stable".
    const apps = await kpromo(['apps', '--sync-timeout', '2s'], viewerKubeconfig);
    expect(apps.code, apps.stderr).toBe(0);
    expect(apps.stdout).toMatch(/^cart\s+team-shop\s+\?\s+\?$/m);
    expect(apps.stderr.trim()).toBe(
      `warning: versions unknown in ${NS}/dev, ${NS}/stable (their workloads could not be read; see kpromo envs)`,
    );
    const d = await kpromo(['diff', 'dev', 'stable', '--sync-timeout', '2s'], viewerKubeconfig);
    expect(d.code, d.stderr).toBe(1);
    expect(oneLineError(d)).toMatch(
      new RegExp(`^error: Environment ${NS}/(dev|stable): its workloads could not be read within 2s \\(.+\\)`),
    );
  });

  it('line stop, list and lift as yourself; a viewer may not stop the line (exit 3)', async () => {
    const denied = await kpromo(['line', 'stop', '--reason', 'let me'], viewerKubeconfig);
    expect(denied.code, denied.stderr).toBe(3);
    expect(oneLineError(denied)).toBe(
      `error: forbidden: system:serviceaccount:${NS}:cli-viewer may not create linestops in namespace ${NS} (Kubernetes RBAC)`,
    );
    const stop = await kpromo(['line', 'stop', '--reason', 'INC-7: payments down', '--name', 'inc-7', '-n', NS]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toContain(`The line is stopped in namespace ${NS} by kpromo-admin: LineStop ${NS}/inc-7.`);
    const json = await kpromo(['line', 'list', '-n', NS, '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).items).toEqual([
      expect.objectContaining({
        name: 'inc-7',
        reason: 'INC-7: payments down',
        stoppedBy: 'kpromo-admin',
        scope: 'Namespace',
      }),
    ]);
    const table = await kpromo(['line', 'list', '-n', NS]);
    expect(table.stdout).toMatch(/^NAME\s+SCOPE\s+ENVIRONMENTS\s+STOPPED BY\s+AGE\s+REASON$/m);
    expect(table.stdout).toMatch(/^inc-7\s+Namespace\s+all\s+kpromo-admin\s+\S+\s+INC-7: payments down$/m);
    const lift = await kpromo(['line', 'lift', 'inc-7', '-n', NS]);
    expect(lift.code, lift.stderr).toBe(0);
    expect(lift.stdout.trim()).toBe(`LineStop ${NS}/inc-7 lifted: held plans go on.`);
    expect((await kpromo(['line', 'list', '-n', NS])).stdout.trim()).toBe(
      `The line runs: no LineStop in namespace ${NS}.`,
    );
  });

  it('a user who may not read kpromo resources is forbidden (exit 3), told what the CLI needs', async () => {
    const r = await kpromo(['plan', 'list'], nobodyKubeconfig);
    expect(r.code, r.stderr).toBe(3);
    expect(oneLineError(r)).toMatch(
      new RegExp(
        `^error: forbidden: system:serviceaccount:${NS}:cli-nobody may not list \\S+ in namespace ${NS} \\(Kubernetes RBAC: kpromo reads .* with get, list and watch\\)$`,
      ),
    );
  });

  it('an unknown plan exits 4; a bad command line exits 2', async () => {
    const missing = await kpromo(['plan', 'get', 'no-such-plan', '-n', NS]);
    expect(missing.code, missing.stderr).toBe(4);
    expect(oneLineError(missing)).toBe(`error: PromotionPlan ${NS}/no-such-plan not found`);

    const badFormat = await kpromo(['apps', '-n', NS, '-o', 'xml']);
    expect(badFormat.code, badFormat.stderr).toBe(2);
    expect(badFormat.stderr).toMatch(/option '-o, --output <format>' argument 'xml' is invalid/);
    const badName = await kpromo(['plan', 'get', 'Not_A_Name', '-n', NS]);
    expect(badName.code, badName.stderr).toBe(2);
    expect(oneLineError(badName)).toMatch(/^error: invalid arguments: name: must be a Kubernetes object name/);
  });

  it('runs as the kubectl plugin kubectl-kpromo (the bundle linked under that name)', async () => {
    const plugin = join(tmp, 'kubectl-kpromo');
    symlinkSync(BUNDLE, plugin);
    const help = await run(plugin, ['--help']);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: kubectl kpromo /);
    const listed = await run(plugin, ['plan', 'list', '-n', NS]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^cli-p1\s+promote/m);
  });

  it('completion bash prints a script bash accepts', async () => {
    const r = await kpromo(['completion', 'bash']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^complete -F _kpromo kpromo kubectl-kpromo$/m);
    const check = spawnSync('bash', ['-n'], { input: r.stdout, encoding: 'utf8' });
    expect(check.status, check.stderr).toBe(0);
  });
});
