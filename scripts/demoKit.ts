// What both demos (`yarn demo` and `yarn demo --quick`, scripts/demo.ts) share: the demo people and
// their tokens, the controller on the local clusters, the API as one of those people, plan watching,
// the printed steps and where the time went.

import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PromotionPlan } from '@kpromo/api';
import type { ApplicationView } from '@kpromo/contract';
import { type Config, loadConfig, type Running, startController } from '@kpromo/controller';
import { applyManifest, loadYaml, REPO_ROOT, type setUpSampleRelease, stateDir, waitFor } from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';

export type Sample = Awaited<ReturnType<typeof setUpSampleRelease>>;

export const say = (m: string) => console.log(`\x1b[36m▸\x1b[0m ${m}`);

/** Where the demo's time went: each phase's seconds, printed at the end. */
export class Timeline {
  private readonly started = Date.now();
  private readonly phases: Array<{ name: string; seconds: number }> = [];

  async phase<T>(name: string, run: () => Promise<T>): Promise<T> {
    const t = Date.now();
    // Listed where it started: the parts of it recorded meanwhile come after it.
    const entry = { name, seconds: 0 };
    this.phases.push(entry);
    try {
      return await run();
    } finally {
      entry.seconds = (Date.now() - t) / 1000;
    }
  }

  /** A phase timed by the caller (e.g. part of another), listed in the order recorded. */
  record(name: string, seconds: number): void {
    this.phases.push({ name, seconds });
  }

  /** Seconds since the demo started. */
  elapsed(): number {
    return (Date.now() - this.started) / 1000;
  }

  print(): void {
    say(`demo finished in ${this.elapsed().toFixed(1)}s; where the time went:`);
    const width = Math.max(...this.phases.map((p) => p.name.length));
    for (const p of this.phases) console.log(`    ${p.name.padEnd(width)}  ${p.seconds.toFixed(1).padStart(6)}s`);
  }
}

/** Demo people: a developer may approve into stable, a release manager into prod (examples/deploy/rbac-examples.yaml). */
export const PEOPLE = [
  { username: 'developer', groups: ['shop-developers'], role: 'kpromo-developer' },
  { username: 'release-manager', groups: ['release-managers'], role: 'kpromo-release-manager' },
] as const;
export type Person = (typeof PEOPLE)[number]['username'];

export interface People {
  tokensFile: string;
  dir: string;
  token: Record<Person, string>;
}

/**
 * Static API tokens for the demo people (written under the state dir, printed for curl) and their
 * RBAC in the demo namespace, from the example ClusterRoles.
 */
export async function setUpPeople(control: k8s.KubeConfig, ns: string): Promise<People> {
  const dir = join(stateDir(), 'demo');
  mkdirSync(dir, { recursive: true });
  const tokens = PEOPLE.map((p) => ({ ...p, token: randomBytes(24).toString('hex') }));
  const tokensFile = join(dir, 'tokens.yaml');
  writeFileSync(
    tokensFile,
    stringify({ tokens: tokens.map((t) => ({ token: t.token, username: t.username, groups: [...t.groups] })) }),
    { mode: 0o600 },
  );
  for (const t of tokens) writeFileSync(join(dir, `${t.username}.token`), t.token, { mode: 0o600 });
  const examples = loadYaml(join(REPO_ROOT, 'examples/deploy/rbac-examples.yaml'));
  for (const doc of examples.filter(
    (d) => d.kind === 'ClusterRole' && d.metadata?.name !== 'kpromo-portal-impersonator',
  ))
    await applyManifest(control, doc);
  const bind = (name: string, role: string, groups: readonly string[]) =>
    applyManifest(control, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: groups.map((g) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: g })),
    } as k8s.V1RoleBinding);
  await bind('demo-viewers', 'kpromo-viewer', ['shop-developers', 'release-managers']);
  for (const p of PEOPLE) await bind(`demo-${p.username}`, p.role, p.groups);
  return {
    tokensFile,
    dir,
    token: Object.fromEntries(tokens.map((t) => [t.username, t.token])) as Record<Person, string>,
  };
}

/** The controller on the local clusters, for the demo namespace; `extra` adds to its config. */
export async function startDemoController(
  sample: Sample,
  people: People,
  opts: { namespace: string; port: number; extra?: Record<string, unknown> },
): Promise<Running> {
  const NS = opts.namespace;
  const cfg: Config = loadConfig({
    env: {},
    flags: {
      kubeconfig: sample.kubeconfigPath,
      context: 'dev',
      namespaces: [NS],
      defaultNamespace: NS,
      logLevel: process.env.KPROMO_LOG_LEVEL ?? 'warn',
      server: { host: '127.0.0.1', port: opts.port },
      leaderElection: { namespace: NS },
      auth: { staticTokensFile: people.tokensFile },
      // The demo Environments (namespace NS) may use the local clusters' contexts, nothing else.
      clusterAccess: [{ namespaces: [NS], contexts: sample.clusters.map((c) => c.name) }],
      // The demo registry listens on loopback, which registry traffic may reach only when allowed.
      egress: { allowedCidrs: ['127.0.0.1/32'] },
      ...opts.extra,
    },
  });
  return startController(cfg);
}

/** The controller's API as one of the demo people. */
export function apiAs(port: number, people: People) {
  return async <T>(path: string, as: Person, body?: unknown): Promise<{ status: number; ok: boolean; body: T }> => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${people.token[as]}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, ok: res.ok, body: (await res.json()) as T };
  };
}
export type Api = ReturnType<typeof apiAs>;

/** Reads a plan from the control cluster (status included). */
export function planReader(control: k8s.KubeConfig, ns: string) {
  const custom = control.makeApiClient(k8s.CustomObjectsApi);
  return async (name: string) =>
    (await custom.getNamespacedCustomObject({
      group: 'promotions.kpromo.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'promotionplans',
      name,
    })) as PromotionPlan;
}

/**
 * Waits until `until` holds for the plan, printing each change of `line` (one line of progress)
 * as it happens.
 */
export async function watchPlan(
  read: (name: string) => Promise<PromotionPlan>,
  name: string,
  until: (p: PromotionPlan) => boolean,
  line: (p: PromotionPlan) => string = appsLine,
  timeoutMs = 300_000,
): Promise<PromotionPlan> {
  let last = '';
  return waitFor(
    `plan ${name}`,
    async () => {
      const p = await read(name);
      const now = line(p);
      if (now && now !== last) console.log(`    ${now}`);
      last = now;
      return until(p) ? p : undefined;
    },
    timeoutMs,
    300,
  );
}

export const appsLine = (p: PromotionPlan) =>
  (p.status?.apps ?? []).map((a) => `${a.application}:${a.phase}`).join(' ');

export const isFinished = (p: PromotionPlan) => ['Complete', 'Incomplete', 'Failed'].includes(p.status?.phase ?? '');

/** Applications × environments: the tag and health running in each, as a plain text table. */
export function versionTable(apps: ApplicationView[], envs: string[]): string {
  const cell = (a: ApplicationView, e: string) => {
    const v = a.versions.find((x) => x.environment === e);
    return v?.tag ? `${v.tag} ${v.health === 'Healthy' ? '✓' : v.health}` : (v?.health ?? '-');
  };
  const rows = [['application', ...envs], ...apps.map((a) => [a.name, ...envs.map((e) => cell(a, e))])];
  const width = envs.map((_, i) => Math.max(...rows.map((r) => r[i + 1].length)));
  const first = Math.max(...rows.map((r) => r[0].length));
  return rows
    .map(
      (r) =>
        `    ${r[0].padEnd(first)}  ${r
          .slice(1)
          .map((c, i) => c.padEnd(width[i]))
          .join('  ')}`,
    )
    .join('\n');
}
