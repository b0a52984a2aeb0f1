// `yarn demo`: the controller on a local three-cluster control plane, end to end.
//
// Without a kubeconfig (no --kubeconfig, no KUBECONFIG) it builds/starts the local clusters (real
// kube-apiserver, etcd, controller-manager, scheduler, kwok), two real OCI registries, pushes sample
// images and a `shop` release (4 apps × dev/stable/prod), starts the controller and tells the story
// step by step (scripts/demoStory.ts): the estate with a prod fleet, signed releases and an unsigned
// candidate refused, dev -> stable by the developer, stable -> prod by the release manager wave by
// wave, the signed record checked with `kpromo verify`, and where to look next. `--quick` promotes
// dev -> stable -> prod and nothing else. With a kubeconfig it just runs the controller against that
// cluster. `--once` exits at the end (used by the test suite).

import type { PromotionPlan } from '@kpromo/api';
import type { ApplicationView, ListResponse } from '@kpromo/contract';
import { loadConfig, startController } from '@kpromo/controller';
import { kubeConfigFor, setUpSampleRelease } from '@kpromo/test-harness';
import {
  apiAs,
  isFinished,
  planReader,
  say,
  setUpPeople,
  startDemoController,
  Timeline,
  versionTable,
  watchPlan,
} from './demoKit.js';
import { tellTheStory } from './demoStory.js';

const args = process.argv.slice(2);
const once = args.includes('--once');
const quick = args.includes('--quick');
const flag = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const NS = flag('namespace') ?? 'kpromo-demo';
const PORT = Number(flag('port') ?? process.env.KPROMO_PORT ?? 8080);

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

async function main() {
  const given = flag('kubeconfig') ?? process.env.KUBECONFIG;
  if (given) return runAgainstExistingCluster(given);
  const time = new Timeline();
  if (!quick) return tellTheStory({ namespace: NS, port: PORT, once, time });

  say('starting the local control plane (first run builds Kubernetes from source: ~6 min)…');
  const sample = await time.phase('clusters, registries and the sample release', () =>
    setUpSampleRelease({
      namespace: NS,
      registryPort: Number(process.env.KPROMO_DEMO_REGISTRY_PORT ?? 17601),
      label: 'demo',
      log: say,
    }),
  );
  say(
    `clusters ${sample.clusters.map((c) => `${c.name}=${c.server}`).join(', ')}; release ready (${time.elapsed().toFixed(1)}s)`,
  );
  const control = kubeConfigFor('dev', sample.kubeconfigPath);
  const people = await setUpPeople(control, NS);
  const running = await startDemoController(sample, people, { namespace: NS, port: PORT });
  say(`controller running; API http://127.0.0.1:${running.port}/api/v1/applications, metrics /metrics`);
  const api = apiAs(running.port ?? PORT, people);
  await time.phase('promotions dev -> stable -> prod', () => promoteQuickly(api, planReader(control, NS)));

  const apps = await api<ListResponse<ApplicationView>>(`/applications?namespace=${NS}`, 'developer');
  say('versions per environment now:');
  console.log(versionTable(apps.body.items, ['dev', 'stable', 'prod']));
  time.print();
  if (once) {
    await running.stop();
    await sample.stop();
    return;
  }
  say(
    `controller keeps running; try: curl -s -H "Authorization: Bearer $(cat ${people.dir}/developer.token)" ` +
      `localhost:${running.port}/api/v1/applications?namespace=${NS} | jq .\n  the portal on the same clusters: \`yarn portal\`, then http://localhost:7007/promotions\n  (Ctrl-C stops; \`yarn cluster stop\` stops the clusters)`,
  );
  await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  await running.stop();
  await sample.stop();
}

/** `--quick`: dev -> stable by the developer, stable -> prod refused to them and approved by the release manager. */
async function promoteQuickly(api: ReturnType<typeof apiAs>, read: ReturnType<typeof planReader>) {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15).toLowerCase();
  for (const [from, to, approver] of [
    ['dev', 'stable', 'developer'],
    ['stable', 'prod', 'release-manager'],
  ] as const) {
    const name = `shop-${to}-${stamp}`;
    // What the developer reviews; approving at creation carries the digests shown (expect), so a
    // version deployed to the source in between is refused, not approved unseen.
    const diff = await api<{ candidates: Array<{ application: string; from: { digest: string } }> }>(
      `/diff?${new URLSearchParams({ namespace: NS, flow: 'shop', from, to })}`,
      'developer',
    );
    if (!diff.ok)
      throw new Error(`reading candidates ${from} -> ${to} failed: HTTP ${diff.status} ${JSON.stringify(diff.body)}`);
    const approveNow = to !== 'prod';
    const res = await api<{ plan: PromotionPlan }>('/plans', 'developer', {
      namespace: NS,
      flow: 'shop',
      from,
      to,
      name,
      approve: approveNow,
      ...(approveNow
        ? { expect: Object.fromEntries(diff.body.candidates.map((c) => [c.application, c.from.digest])) }
        : {}),
    });
    if (!res.ok)
      throw new Error(`creating plan ${from} -> ${to} failed: HTTP ${res.status} ${JSON.stringify(res.body)}`);
    const planName = res.body.plan.metadata.name;
    if (to === 'prod') {
      // Approvals name the plan reviewed (its uid): a plan recreated under this name is not approved.
      const uid = res.body.plan.metadata.uid;
      const denied = await api<{ error: string }>(`/plans/${NS}/${planName}/approve`, 'developer', { uid });
      say(`developer approves ${planName}: HTTP ${denied.status} ${denied.body.error}`);
      const ok = await api(`/plans/${NS}/${planName}/approve`, approver, { uid });
      if (!ok.ok) throw new Error(`approving ${planName} failed: HTTP ${ok.status} ${JSON.stringify(ok.body)}`);
    }
    say(`plan ${planName}: ${from} -> ${to}, approved by ${approver}; promoting…`);
    const done = await watchPlan(read, planName, isFinished);
    say(
      `plan ${planName}: ${done.status?.phase} (${done.status?.succeeded ?? 0} succeeded, ${done.status?.failed ?? 0} failed)`,
    );
    for (const a of done.status?.apps ?? [])
      console.log(`    ${a.application.padEnd(10)} ${a.phase.padEnd(10)} ${a.targetTag ?? ''} ${a.message ?? ''}`);
    if (done.status?.phase !== 'Complete') throw new Error(`plan ${planName} ended ${done.status?.phase}`);
  }
}

main().catch((e: unknown) => {
  console.error(`demo failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
