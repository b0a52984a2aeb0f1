// `yarn demo`: the controller on a local three-cluster control plane, end to end.
//
// Without a kubeconfig (no --kubeconfig, no KUBECONFIG) it builds/starts the local clusters (real
// kube-apiserver, etcd, controller-manager, scheduler, kwok), two real OCI registries, pushes sample
// images, applies the CRDs and a `shop` release (4 apps × dev/stable/prod), starts the controller and
// promotes dev -> stable -> prod, printing progress. With a kubeconfig it just runs the controller
// against that cluster. `--once` exits after the promotions (used by the test suite).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { API_VERSION, type PromotionPlan } from '@kpromo/api';
import { type Config, loadConfig, startController } from '@kpromo/controller';
import {
  applyCrds,
  applyManifest,
  ensureClusters,
  ensureNamespace,
  kubeConfigFor,
  pushTestImage,
  startRegistry,
  stateDir,
  waitFor,
} from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';

const args = process.argv.slice(2);
const once = args.includes('--once');
const flag = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const NS = flag('namespace') ?? 'kpromo-demo';
const PORT = Number(flag('port') ?? process.env.KPROMO_PORT ?? 8080);
const APPS = ['checkout', 'cart', 'search', 'ledger'];
const say = (m: string) => console.log(`\x1b[36m▸\x1b[0m ${m}`);

async function runAgainstExistingCluster(kubeconfig: string) {
  say(`using ${kubeconfig}; starting the controller (Ctrl-C to stop)`);
  const cfg = loadConfig({ flags: { kubeconfig, server: { host: '127.0.0.1', port: PORT } } });
  const running = await startController(cfg);
  say(`controller API on http://127.0.0.1:${running.port}/api/v1/applications`);
  await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  await running.stop();
}

async function main() {
  const given = flag('kubeconfig') ?? process.env.KUBECONFIG;
  if (given) return runAgainstExistingCluster(given);

  const t0 = Date.now();
  say('starting the local control plane (first run builds Kubernetes from source: ~15 min)…');
  const cp = await ensureClusters({ log: (m) => console.log(`  ${m}`) });
  say(
    `clusters ${cp.clusters.map((c) => `${c.name}=${c.server}`).join(', ')} ready (${((Date.now() - t0) / 1000).toFixed(1)}s)`,
  );

  const demoDir = join(stateDir(), '..', 'demo');
  mkdirSync(demoDir, { recursive: true });
  const devRegistry = await startRegistry({
    port: Number(process.env.KPROMO_DEMO_REGISTRY_PORT ?? 17601),
    storage: join(demoDir, 'registry-dev'),
    name: 'demo-registry-dev',
  });
  const releaseRegistry = await startRegistry({
    port: Number(process.env.KPROMO_DEMO_REGISTRY_PORT ?? 17601) + 1,
    storage: join(demoDir, 'registry-release'),
    name: 'demo-registry-release',
  });
  say(`registries: dev ${devRegistry.host}, release ${releaseRegistry.host}`);

  const control = kubeConfigFor('dev', cp.kubeconfigPath);
  await applyCrds(control);
  // Each run starts from a clean namespace so the story (v1.1.0 in dev, v1.0.0 elsewhere) holds.
  for (const c of cp.clusters) {
    const core = kubeConfigFor(c.name, cp.kubeconfigPath).makeApiClient(k8s.CoreV1Api);
    await core.deleteNamespace({ name: NS }).catch(() => undefined);
    await waitFor(
      `namespace ${NS} deleted in ${c.name}`,
      () =>
        core.readNamespace({ name: NS }).then(
          () => false,
          () => true,
        ),
      120_000,
      500,
    );
    await ensureNamespace(kubeConfigFor(c.name, cp.kubeconfigPath), NS);
  }

  const envs = [
    { name: 'dev', host: devRegistry.host, prefix: undefined, tier: 'development' },
    { name: 'stable', host: releaseRegistry.host, prefix: 'stable', tier: 'staging' },
    { name: 'prod', host: releaseRegistry.host, prefix: 'prod', tier: 'production' },
  ] as const;
  for (const e of envs) {
    await applyManifest(control, {
      apiVersion: API_VERSION,
      kind: 'Environment',
      metadata: { name: e.name, namespace: NS },
      spec: {
        tier: e.tier,
        cluster: { context: e.name },
        namespace: NS,
        registry: { host: e.host, insecure: true, ...(e.prefix ? { prefix: e.prefix } : {}) },
        delivery: { method: 'patch' },
      },
    });
  }
  await applyManifest(control, {
    apiVersion: API_VERSION,
    kind: 'PromotionFlow',
    metadata: { name: 'shop', namespace: NS },
    spec: {
      stages: [{ environment: 'dev' }, { environment: 'stable' }, { environment: 'prod' }],
      approval: 'manual',
      tagPattern: '^v\\d+\\.\\d+\\.\\d+',
      concurrency: 4,
      rolloutTimeoutSeconds: 120,
    },
  });

  say(`pushing images and deploying ${APPS.length} apps (dev runs v1.1.0, stable and prod run v1.0.0)…`);
  for (const app of APPS) {
    await applyManifest(control, {
      apiVersion: API_VERSION,
      kind: 'Application',
      metadata: { name: app, namespace: NS },
      spec: {
        owner: app === 'ledger' ? 'team-payments' : 'team-shop',
        system: 'shop',
        image: { repository: `shop/${app}` },
        workloads: [{ kind: 'Deployment', name: app }],
        healthChecks: [{ name: 'rollout', type: 'workloadReady' }],
      },
    });
    for (const e of envs) {
      const version = e.name === 'dev' ? 'v1.1.0' : 'v1.0.0';
      const repo = `${e.prefix ? `${e.prefix}/` : ''}shop/${app}`;
      const { digest } = await pushTestImage({
        host: e.host,
        repository: repo,
        tag: version,
        seed: `${app}-${version}`,
      });
      await applyManifest(kubeConfigFor(e.name, cp.kubeconfigPath), {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: app, namespace: NS, labels: { app } },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app } },
          template: {
            metadata: { labels: { app } },
            spec: { containers: [{ name: 'app', image: `${e.host}/${repo}:${version}@${digest}` }] },
          },
        },
      } as k8s.V1Deployment);
    }
  }

  say('waiting for the workloads to be Ready (kwok)…');
  for (const e of envs) {
    const appsApi = kubeConfigFor(e.name, cp.kubeconfigPath).makeApiClient(k8s.AppsV1Api);
    for (const app of APPS) {
      await waitFor(
        `${e.name}/${NS}/${app} Ready`,
        async () => {
          const d = await appsApi.readNamespacedDeployment({ name: app, namespace: NS });
          const s = d.status;
          return (
            s?.observedGeneration === d.metadata?.generation &&
            s?.updatedReplicas === 2 &&
            s?.availableReplicas === 2 &&
            !s?.unavailableReplicas
          );
        },
        120_000,
      );
    }
  }

  const cfg: Config = loadConfig({
    env: {},
    flags: {
      kubeconfig: cp.kubeconfigPath,
      context: 'dev',
      namespaces: [NS],
      defaultNamespace: NS,
      logLevel: process.env.KPROMO_LOG_LEVEL ?? 'warn',
      server: { host: '127.0.0.1', port: PORT },
      leaderElection: { namespace: NS },
    },
  });
  const running = await startController(cfg);
  say(`controller running; API http://127.0.0.1:${running.port}/api/v1/applications, metrics /metrics`);

  const custom = control.makeApiClient(k8s.CustomObjectsApi);
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15).toLowerCase();
  for (const [from, to] of [
    ['dev', 'stable'],
    ['stable', 'prod'],
  ] as const) {
    const name = `shop-${to}-${stamp}`;
    const res = await fetch(`http://127.0.0.1:${running.port}/api/v1/plans`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: NS, flow: 'shop', from, to, name, approve: true }),
    });
    if (!res.ok) throw new Error(`creating plan ${from} -> ${to} failed: HTTP ${res.status} ${await res.text()}`);
    const created = (await res.json()) as { plan?: PromotionPlan } & PromotionPlan;
    const planName = created.plan?.metadata.name ?? created.metadata?.name ?? name;
    say(`plan ${planName}: ${from} -> ${to}, approved; promoting…`);
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
    await fetch(`http://127.0.0.1:${running.port}/api/v1/applications?namespace=${NS}`)
  ).json()) as unknown;
  say('versions per environment now:');
  console.log(JSON.stringify(apps, null, 2).split('\n').slice(0, 60).join('\n'));
  say(`demo finished in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  if (once) {
    await running.stop();
    await devRegistry.stop();
    await releaseRegistry.stop();
    return;
  }
  say(
    'controller keeps running; try: curl -s localhost:' +
      running.port +
      '/api/v1/applications?namespace=' +
      NS +
      ' | jq .  (Ctrl-C stops; `yarn cluster stop` stops the clusters)',
  );
  await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  await running.stop();
  await devRegistry.stop();
  await releaseRegistry.stop();
}

main().catch((e: unknown) => {
  console.error(`demo failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
