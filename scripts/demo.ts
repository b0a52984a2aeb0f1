// `yarn demo`: the controller on a local three-cluster control plane, end to end.
//
// Without a kubeconfig (no --kubeconfig, no KUBECONFIG) it builds/starts the local clusters (real
// kube-apiserver, etcd, controller-manager, scheduler, kwok), two real OCI registries, pushes sample
// images, applies the CRDs and a `shop` release (4 apps × dev/stable/prod), starts the controller and
// promotes dev -> stable -> prod, printing progress. With a kubeconfig it just runs the controller
// against that cluster. `--once` exits after the promotions (used by the test suite).

import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PromotionPlan } from '@kpromo/api';
import type { ApplicationView, ListResponse } from '@kpromo/contract';
import { type Config, loadConfig, startController } from '@kpromo/controller';
import {
  applyManifest,
  kubeConfigFor,
  loadYaml,
  REPO_ROOT,
  setUpSampleRelease,
  stateDir,
  waitFor,
} from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';

const args = process.argv.slice(2);
const once = args.includes('--once');
const flag = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const NS = flag('namespace') ?? 'kpromo-demo';
const PORT = Number(flag('port') ?? process.env.KPROMO_PORT ?? 8080);
const say = (m: string) => console.log(`\x1b[36m▸\x1b[0m ${m}`);

async function runAgainstExistingCluster(kubeconfig: string) {
  say(`using ${kubeconfig}; starting the controller (Ctrl-C to stop)`);
  // The controller runs as your kubeconfig user: where kpromo's admission policies are installed
  // they trust only the usernames their controller identity ConfigMap lists (docs/security.md).
  say(
    'if kpromo admission policies are installed there, list your kubeconfig user in their ConfigMap kpromo-controller-identity, or its status writes are refused',
  );
  // Demo against your own kubeconfig: Environments in every namespace may use every context of it
  // (a real deployment lists namespaces and contexts in clusterAccess; absent = none).
  const cfg = loadConfig({
    flags: {
      kubeconfig,
      server: { host: '127.0.0.1', port: PORT },
      clusterAccess: [{ namespaces: ['*'], contexts: ['*'], targetNamespaces: ['*'] }],
    },
  });
  const running = await startController(cfg);
  say(`controller API on http://127.0.0.1:${running.port}/api/v1/applications`);
  await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  await running.stop();
}

/** Demo people: a developer may approve into stable, a release manager into prod (examples/deploy/rbac-examples.yaml). */
const PEOPLE = [
  { username: 'developer', groups: ['shop-developers'], role: 'kpromo-developer' },
  { username: 'release-manager', groups: ['release-managers'], role: 'kpromo-release-manager' },
] as const;

/**
 * Static API tokens for the demo people (written under the state dir, printed for curl) and their
 * RBAC in the demo namespace, from the example ClusterRoles.
 */
async function setUpPeople(control: k8s.KubeConfig, ns: string) {
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
  return { tokensFile, dir, token: Object.fromEntries(tokens.map((t) => [t.username, t.token])) };
}

async function main() {
  const given = flag('kubeconfig') ?? process.env.KUBECONFIG;
  if (given) return runAgainstExistingCluster(given);

  const t0 = Date.now();
  say('starting the local control plane (first run builds Kubernetes from source: ~6 min)…');
  const sample = await setUpSampleRelease({
    namespace: NS,
    registryPort: Number(process.env.KPROMO_DEMO_REGISTRY_PORT ?? 17601),
    label: 'demo',
    log: say,
  });
  say(
    `clusters ${sample.clusters.map((c) => `${c.name}=${c.server}`).join(', ')}; release ready (${((Date.now() - t0) / 1000).toFixed(1)}s)`,
  );
  const control = kubeConfigFor('dev', sample.kubeconfigPath);
  const people = await setUpPeople(control, NS);

  const cfg: Config = loadConfig({
    env: {},
    flags: {
      kubeconfig: sample.kubeconfigPath,
      context: 'dev',
      namespaces: [NS],
      defaultNamespace: NS,
      logLevel: process.env.KPROMO_LOG_LEVEL ?? 'warn',
      server: { host: '127.0.0.1', port: PORT },
      leaderElection: { namespace: NS },
      auth: { staticTokensFile: people.tokensFile },
      // The demo Environments (namespace NS) may use the local clusters' contexts, nothing else.
      clusterAccess: [{ namespaces: [NS], contexts: sample.clusters.map((c) => c.name) }],
      // The demo registry listens on loopback, which registry traffic may reach only when allowed.
      egress: { allowedCidrs: ['127.0.0.1/32'] },
    },
  });
  const running = await startController(cfg);
  say(`controller running; API http://127.0.0.1:${running.port}/api/v1/applications, metrics /metrics`);

  const custom = control.makeApiClient(k8s.CustomObjectsApi);
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15).toLowerCase();
  const api = (path: string, as: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${running.port}/api/v1${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${people.token[as]}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  // The developer may approve into stable; prod needs the release manager (RBAC verb approve).
  for (const [from, to, approver] of [
    ['dev', 'stable', 'developer'],
    ['stable', 'prod', 'release-manager'],
  ] as const) {
    const name = `shop-${to}-${stamp}`;
    // What the developer reviews; approving at creation carries the digests shown (expect), so a
    // version deployed to the source in between is refused, not approved unseen.
    const diff = await api(`/diff?${new URLSearchParams({ namespace: NS, flow: 'shop', from, to })}`, 'developer');
    if (!diff.ok)
      throw new Error(`reading candidates ${from} -> ${to} failed: HTTP ${diff.status} ${await diff.text()}`);
    const shown = (await diff.json()) as { candidates: Array<{ application: string; from: { digest: string } }> };
    const approveNow = to !== 'prod';
    const res = await api('/plans', 'developer', {
      namespace: NS,
      flow: 'shop',
      from,
      to,
      name,
      approve: approveNow,
      ...(approveNow
        ? { expect: Object.fromEntries(shown.candidates.map((c) => [c.application, c.from.digest])) }
        : {}),
    });
    if (!res.ok) throw new Error(`creating plan ${from} -> ${to} failed: HTTP ${res.status} ${await res.text()}`);
    const created = (await res.json()) as { plan: PromotionPlan };
    const planName = created.plan.metadata.name;
    if (to === 'prod') {
      // Approvals name the plan reviewed (its uid): a plan recreated under this name is not approved.
      const uid = created.plan.metadata.uid;
      const denied = await api(`/plans/${NS}/${planName}/approve`, 'developer', { uid });
      say(
        `developer approves ${planName}: HTTP ${denied.status} ${((await denied.json()) as { error: string }).error}`,
      );
      const ok = await api(`/plans/${NS}/${planName}/approve`, approver, { uid });
      if (!ok.ok) throw new Error(`approving ${planName} failed: HTTP ${ok.status} ${await ok.text()}`);
    }
    say(`plan ${planName}: ${from} -> ${to}, approved by ${approver}; promoting…`);
    let last = '';
    const done = await waitFor(
      `plan ${planName} to finish`,
      async () => {
        const p = (await custom.getNamespacedCustomObject({
          group: 'promotions.kpromo.dev',
          version: 'v1alpha1',
          namespace: NS,
          plural: 'promotionplans',
          name: planName,
        })) as PromotionPlan;
        const line = (p.status?.apps ?? []).map((a) => `${a.application}:${a.phase}`).join(' ');
        if (line && line !== last) console.log(`    ${line}`);
        last = line;
        return ['Complete', 'Incomplete', 'Failed'].includes(p.status?.phase ?? '') ? p : undefined;
      },
      300_000,
      500,
    );
    say(
      `plan ${planName}: ${done.status?.phase} (${done.status?.succeeded ?? 0} succeeded, ${done.status?.failed ?? 0} failed)`,
    );
    for (const a of done.status?.apps ?? [])
      console.log(`    ${a.application.padEnd(10)} ${a.phase.padEnd(10)} ${a.targetTag ?? ''} ${a.message ?? ''}`);
    if (done.status?.phase !== 'Complete') {
      await running.stop();
      throw new Error(`plan ${planName} ended ${done.status?.phase}`);
    }
  }

  const apps = (await (
    await api(`/applications?namespace=${NS}`, 'developer')
  ).json()) as ListResponse<ApplicationView>;
  say('versions per environment now:');
  console.log(versionTable(apps.items, ['dev', 'stable', 'prod']));
  say(`demo finished in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  if (once) {
    await running.stop();
    await sample.stop();
    return;
  }
  say(
    `controller keeps running; try: curl -s -H "Authorization: Bearer $(cat ${join(people.dir, 'developer.token')})" ` +
      `localhost:${running.port}/api/v1/applications?namespace=${NS} | jq .\n  the portal on the same clusters: \`yarn portal\`, then http://localhost:7007/promotions\n  (Ctrl-C stops; \`yarn cluster stop\` stops the clusters)`,
  );
  await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  await running.stop();
  await sample.stop();
}

/** Applications × environments: the tag and health running in each, as a plain text table. */
function versionTable(apps: ApplicationView[], envs: string[]): string {
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

main().catch((e: unknown) => {
  console.error(`demo failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
