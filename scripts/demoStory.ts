// `yarn demo` tells the story of a release, each step printed as it happens (what is about to happen
// and why, then the result): the estate (a prod fleet in two waves, approvals and a signature policy
// per stage), signed releases with one unsigned candidate refused before any copy, dev -> stable by
// the developer, stable -> prod refused to the developer and approved and continued wave by wave by
// the release manager, the signed record checked with `kpromo verify` and cosign, and where to look.
// The demo checks each outcome itself and fails when one is not what the story says.

import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { API_VERSION, PROMOTION_PREDICATE_TYPE, type PromotionPlan } from '@kpromo/api';
import type { ApplicationView, ListResponse } from '@kpromo/contract';
import type { Running } from '@kpromo/controller';
import {
  APPS,
  applyManifest,
  cosign,
  cosignSign,
  kubeConfigFor,
  needComponents,
  REPO_ROOT,
  setUpSampleRelease,
  stateDir,
} from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';
import { aBadRelease, aLineStop, ERROR_RATE, measureStable, type Stage, startShopMetrics } from './demoIncidents.js';
import {
  type Api,
  apiAs,
  isFinished,
  type People,
  planReader,
  type Sample,
  setUpPeople,
  startDemoController,
  type Timeline,
  versionTable,
  watchPlan,
} from './demoKit.js';

const STEPS = 8;
/** The candidate nobody signed: pushed by hand, past the build pipeline. */
const UNSIGNED = 'ledger';
/** The controller's own namespace, where the platform's key Secrets live (docs/supply-chain.md). */
const PLATFORM_NS = 'kpromo';
const COSIGN_PASSWORD = 'kpromo-demo';

let stepNo = 0;
/** A step's heading and what is about to happen, and why. */
function step(title: string, ...why: string[]) {
  stepNo++;
  console.log(`\n\x1b[1m[${stepNo}/${STEPS}] ${title}\x1b[0m`);
  for (const w of why) console.log(`    ${w}`);
}
const next = (m: string) => console.log(`    → ${m}`);
const ok = (m: string) => console.log(`    \x1b[32m✔\x1b[0m ${m}`);
/** A result's second line. */
const more = (m: string) => console.log(`      ${m}`);
const no = (m: string) => console.log(`    \x1b[31m✖\x1b[0m ${m}`);
const indent = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .map((l) => `        ${l}`)
    .join('\n');
/** The story goes on only when what happened is what it says. */
function check(cond: unknown, what: string): asserts cond {
  if (!cond) throw new Error(`the demo expected ${what}`);
}

interface Story {
  ns: string;
  sample: Sample;
  control: k8s.KubeConfig;
  people: People;
  running: Running;
  api: Api;
  read: ReturnType<typeof planReader>;
  keys: Keys;
  time: Timeline;
}

export async function tellTheStory(o: { namespace: string; port: number; once: boolean; time: Timeline }) {
  const { time } = o;
  const ns = o.namespace;
  // cosign (built from its Go module once, cached) builds beside the clusters, as `yarn test` does.
  const cosignReady = time.phase('cosign ready (beside the clusters; built once, cached)', () =>
    needComponents('cosign'),
  );
  cosignReady.catch(() => undefined);
  const shopMetricsReady = time.phase('prometheus ready (beside the clusters; built once, cached)', async () => {
    await needComponents('prometheus');
    return startShopMetrics(APPS);
  });
  shopMetricsReady.catch(() => undefined);
  const estate = await theEstate(ns, time).catch(async (e: unknown) => {
    await shopMetricsReady.then((m) => m.stop()).catch(() => undefined);
    throw e;
  });
  const shopMetrics = await shopMetricsReady;
  let running: Running | undefined;
  try {
    running = await runTheStory({ ...o, ns, estate, shopMetrics, cosignReady });
    if (o.once) return;
    await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  } finally {
    await running?.stop();
    await estate.sample.stop();
    await shopMetrics.stop();
  }
}

/** Steps 2 to 8, on the estate: returns the controller, which keeps running unless --once. */
async function runTheStory(o: {
  ns: string;
  port: number;
  time: Timeline;
  estate: Awaited<ReturnType<typeof theEstate>>;
  shopMetrics: Awaited<ReturnType<typeof startShopMetrics>>;
  cosignReady: Promise<void>;
}): Promise<Running> {
  const { ns, time, shopMetrics, cosignReady } = o;
  const { sample, control, people } = o.estate;
  await measureStable(control, ns, shopMetrics.prom.url);
  const keys = await time.phase('keys and signing', async () => {
    await cosignReady;
    return signReleases(ns, control, sample);
  });
  const running = await time.phase('controller start', () =>
    startDemoController(sample, people, {
      namespace: ns,
      port: o.port,
      extra: {
        clusterAccess: [
          {
            namespaces: [ns],
            contexts: sample.clusters.map((c) => c.name),
            targetNamespaces: [...new Set([ns, ...(sample.fleet ?? []).map((f) => f.namespace)])],
          },
        ],
        supplyChain: {
          namespace: PLATFORM_NS,
          trustedKeys: [{ name: 'build', secret: `${ns}-build-key`, namespaces: [ns] }],
          signingKeys: [{ name: 'promotion', secret: `${ns}-promotion-key`, namespaces: [ns] }],
        },
        // Agents get the same doors as people: each MCP call runs as its token's user, under RBAC.
        mcp: { enabled: true, port: o.port === 0 ? 0 : o.port + 10, write: true },
      },
    }),
  );
  const s: Story = {
    ns,
    sample,
    control,
    people,
    running,
    api: apiAs(running.port ?? o.port, people),
    read: planReader(control, ns),
    keys,
    time,
  };
  try {
    await time.phase('dev -> stable', () => devToStable(s));
    const promoted = await time.phase('stable -> prod, wave by wave', () => stableToProd(s));
    const stage: Stage = {
      ...s,
      build: keys.build,
      print: { step, next, ok, no, more, check },
    };
    await time.phase('a bad release, rolled back', () => aBadRelease(stage, shopMetrics.metrics));
    await time.phase('a line stop and a hotfix', () => aLineStop(stage));
    await time.phase('kpromo verify and cosign', () => theRecord(s, promoted));
    whereToLook(s);
    time.print();
    return running;
  } catch (e) {
    await running.stop();
    throw e;
  }
}

/** Step 1: the clusters, registries, sample release with a prod fleet, the flow and the people. */
async function theEstate(ns: string, time: Timeline) {
  step(
    'The estate: dev, stable, and a prod fleet in two waves',
    'A platform team ships the shop release (4 apps) through dev → stable → prod. Prod is a fleet:',
    'one stage, one approval, promoted cluster by cluster in waves, a canary first.',
  );
  next('starting the local clusters dev, stable and prod (real kube-apiserver, scheduler, kwok nodes)');
  next('and two OCI registries; the first run builds Kubernetes from source (~6 min), later runs reuse it');
  // Its parts, from the progress it reports: the biggest phase of a second run.
  let lap = Date.now();
  const split = (name: string) => {
    time.record(`  ${name}`, (Date.now() - lap) / 1000);
    lap = Date.now();
  };
  const sample = await time.phase('clusters, registries and the sample release', async () => {
    const release = await setUpSampleRelease({
      namespace: ns,
      registryPort: Number(process.env.KPROMO_DEMO_REGISTRY_PORT ?? 17601),
      label: 'demo',
      log: (m) => {
        if (m.startsWith('registries:')) split('clusters (started, or found running) and registries');
        if (m.startsWith('deploying')) split('namespaces reset');
        console.log(`      ${m}`);
      },
      fleet: true,
      fresh: true,
    });
    split('images pushed, apps deployed and ready');
    return release;
  });
  const control = kubeConfigFor('dev', sample.kubeconfigPath);
  await applyManifest(control, storyFlow(ns));
  const people = await setUpPeople(control, ns);
  const fleet = sample.fleet ?? [];
  ok(`clusters ${sample.clusters.map((c) => `${c.name} (${c.server})`).join(', ')}`);
  ok(`registries: dev ${sample.registries.dev}; release ${sample.registries.release} (stable/…, prod/…)`);
  ok(`dev and stable: one cluster each, namespace ${ns}; dev runs v1.1.0, stable and prod v1.0.0`);
  ok(
    `prod: a fleet of ${fleet.length} entries, ${fleet.map((f) => `${f.name} (namespace ${f.namespace})`).join(' and ')}; ` +
      'the local harness has one prod cluster, so two namespaces on it stand in for two clusters',
  );
  ok('flow shop: stable needs an approval from shop-developers and a signature by the key "build", and');
  more('measures each app 4 s in Prometheus (error rate ≤ 5%, else the whole release rolls back);');
  more('prod needs one by a holder of the RBAC verb approve on environments/prod (release-managers,');
  more('never the developer) and the same signature, and moves in waves: canary (prod-canary), a pause');
  more('until someone continues, then main (prod-main)');
  ok('people (static API tokens, RBAC from examples/deploy/rbac-examples.yaml):');
  more('developer (group shop-developers): creates plans, approves into dev and stable');
  more('release-manager (group release-managers): approves anywhere, continues waves, stops the line');
  return { sample, control, people };
}

/** The demo's flow: approvals and a signature policy per stage, prod in two waves, promotions signed. */
function storyFlow(ns: string) {
  const signed = { keys: [{ name: 'build' }] };
  return {
    apiVersion: API_VERSION,
    kind: 'PromotionFlow',
    metadata: { name: 'shop', namespace: ns },
    spec: {
      stages: [
        { environment: 'dev' },
        {
          environment: 'stable',
          approvers: { groups: ['shop-developers'] },
          signaturePolicy: signed,
          // The real Prometheus measures each promoted app (scripts/demoIncidents.ts, startShopMetrics).
          verification: {
            checks: [{ name: 'error-rate', prometheus: { query: ERROR_RATE, max: 0.05 } }],
            window: '4s',
            interval: '1s',
            minSamples: 2,
            onFailure: 'rollbackRelease',
          },
        },
        {
          environment: 'prod',
          // No group named: RBAC is the policy (the verb approve on environments/prod), so the
          // clusters' admin can approve too in the README's CLI tour after the demo.
          signaturePolicy: signed,
          waves: [{ name: 'canary', clusters: ['prod-canary'], pause: true }, { name: 'main' }],
          onWaveFailure: 'halt',
        },
      ],
      approval: 'manual',
      tagPattern: '^v\\d+\\.\\d+\\.\\d+',
      concurrency: 4,
      rolloutTimeoutSeconds: 120,
      promotionAttestation: { signingKey: 'promotion' },
    },
  };
}

interface Keys {
  dir: string;
  /** cosign's key pair: the build pipeline's signing key. */
  build: { dir: string; key: string; pub: string; password: string };
  /** The public half of kpromo's promotion signing key. */
  promotionPub: string;
}

/** Step 2: the build key and the promotion key, trusted by the platform; every image but one signed. */
async function signReleases(ns: string, control: k8s.KubeConfig, sample: Sample): Promise<Keys> {
  step(
    'Signed releases: only signed images move',
    'The build pipeline signs each image with its cosign key. The platform trusts that key ("build")',
    'and holds a second one kpromo signs each promotion with ("promotion"), both as Secrets in the',
    "controller's namespace kpromo, out of the teams' reach.",
  );
  const dir = join(stateDir(), 'demo', 'keys');
  mkdirSync(dir, { recursive: true });
  const build = { dir, key: join(dir, 'cosign.key'), pub: join(dir, 'cosign.pub'), password: COSIGN_PASSWORD };
  if (!existsSync(build.key)) {
    next(`generating the build key pair with cosign (kept in ${relative(REPO_ROOT, dir)} for later runs)`);
    const r = await cosign(['generate-key-pair'], { cwd: dir, password: COSIGN_PASSWORD });
    if (r.code !== 0) throw new Error(`cosign generate-key-pair in ${dir} failed: ${r.stderr}`);
  }
  const promotionKey = join(dir, 'promotion.key.pem');
  const promotionPub = join(dir, 'kpromo.pub');
  if (!existsSync(promotionKey)) {
    const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    writeFileSync(promotionKey, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    writeFileSync(promotionPub, pair.publicKey.export({ type: 'spki', format: 'pem' }));
  }
  const secret = (name: string, data: Record<string, string>) =>
    applyManifest(control, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: PLATFORM_NS },
      stringData: data,
    } as k8s.V1Secret);
  await secret(`${ns}-build-key`, { 'cosign.pub': readFileSync(build.pub, 'utf8') });
  await secret(`${ns}-promotion-key`, { 'key.pem': readFileSync(promotionKey, 'utf8') });
  ok(
    `trusted key "build" = ${relative(REPO_ROOT, build.pub)}; promotion key "promotion" (public half ${relative(REPO_ROOT, promotionPub)})`,
  );
  const signedApps = APPS.filter((a) => a !== UNSIGNED);
  next(`cosign sign --key cosign.key, offline (no transparency log here): ${signedApps.join(', ')}`);
  await Promise.all(
    signedApps.map((a) => cosignSign(build, `${sample.registries.dev}/shop/${a}@${sample.devDigests[a]}`)),
  );
  ok(`signed ${signedApps.join(', ')} v1.1.0 in the dev registry`);
  no(`${UNSIGNED} v1.1.0 was pushed by hand, past the pipeline: nobody signed it`);
  return { dir, build, promotionPub };
}

/** Creates a plan as the developer, without approving it: approving is a separate, reviewed act. */
async function createPlan(s: Story, from: string, to: string): Promise<PromotionPlan> {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15).toLowerCase();
  const res = await s.api<{ plan: PromotionPlan }>('/plans', 'developer', {
    namespace: s.ns,
    flow: 'shop',
    from,
    to,
    name: `shop-${to}-${stamp}`,
  });
  if (!res.ok) throw new Error(`creating plan ${from} -> ${to} failed: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  const p = res.body.plan;
  ok(
    `developer created plan ${p.metadata.name}: ${p.spec.candidates.map((c) => `${c.application} ${c.from.tag}`).join(', ')}`,
  );
  return p;
}

/** What the approver sees while the plan waits: each candidate's verdict against the stage's policy. */
async function showVerdicts(s: Story, plan: PromotionPlan): Promise<Record<string, string>> {
  const name = plan.metadata.name;
  const waiting = await watchPlan(
    s.read,
    name,
    (p) => (p.status?.candidateSignatures?.length ?? 0) >= plan.spec.candidates.length,
    () => '',
    60_000,
  );
  ok(
    `the plan waits for approval and shows each candidate's signature (portal plan view, \`kpromo plan get ${name}\`):`,
  );
  const verdicts: Record<string, string> = {};
  for (const c of waiting.status?.candidateSignatures ?? []) {
    verdicts[c.application] = c.verdict;
    const mark = c.verdict === 'Verified' ? '✔ Signed  ' : '✖ Not signed';
    console.log(`        ${c.application.padEnd(9)} ${mark} ${c.verdict.padEnd(9)} ${c.message}`);
  }
  return verdicts;
}

async function approve(s: Story, plan: PromotionPlan, as: 'developer' | 'release-manager', comment: string) {
  return s.api<{ error?: string }>(`/plans/${s.ns}/${plan.metadata.name}/approve`, as, {
    uid: plan.metadata.uid,
    comment,
  });
}

const approversOf = (p: PromotionPlan) =>
  (p.status?.gate?.approvers ?? [])
    .filter((a) => a.counted)
    .map((a) => a.user)
    .join(', ');

/** Step 3: the developer promotes into stable; the unsigned candidate is refused before any copy. */
async function devToStable(s: Story) {
  step(
    'dev → stable, by the developer; the unsigned candidate is refused before any copy',
    'The developer reviews the candidates and creates a plan. While it waits for approval kpromo checks',
    "each candidate against stable's signature policy, so whoever approves sees the verdict first.",
  );
  const plan = await createPlan(s, 'dev', 'stable');
  const verdicts = await showVerdicts(s, plan);
  check(verdicts[UNSIGNED] === 'Unsigned', `${UNSIGNED} to be shown Unsigned before approval`);
  next(
    'the developer approves (stable is theirs to approve); the check right before each copy decides, not the approver',
  );
  const approved = await approve(s, plan, 'developer', 'dev -> stable for the shop release');
  if (!approved.ok)
    throw new Error(`developer approving ${plan.metadata.name}: HTTP ${approved.status} ${approved.body.error}`);
  const done = await watchPlan(s.read, plan.metadata.name, isFinished);
  ok(`plan ${plan.metadata.name}: ${done.status?.phase}, approved by ${approversOf(done)}`);
  for (const a of done.status?.apps ?? [])
    console.log(
      `        ${a.application.padEnd(9)} ${a.phase.padEnd(9)} ${a.phase === 'Succeeded' ? (a.targetTag ?? '') : `${a.reason}: ${a.message}`}`,
    );
  const refused = done.status?.apps?.find((a) => a.application === UNSIGNED);
  check(
    refused?.phase === 'Failed' && refused.reason === 'SignaturePolicy' && refused.copied !== true,
    `${UNSIGNED} to fail with SignaturePolicy, nothing copied`,
  );
  check(
    (done.status?.apps ?? []).every((a) => a.application === UNSIGNED || a.phase === 'Succeeded'),
    'every signed app to reach stable',
  );
  check(approversOf(done) === 'developer', 'the developer to be the approver into stable');
  // Nothing of it in stable's registry: its only tag is the one deployed at the start.
  const tags = await registryTags(s.sample.registries.release, `stable/shop/${UNSIGNED}`);
  check(
    tags.length === 1 && tags[0] === 'v1.0.0',
    `stable/shop/${UNSIGNED} to hold only v1.0.0, not ${tags.join(', ')}`,
  );
  const running = await deploymentImage(s, 'stable', s.ns, UNSIGNED);
  check(running.includes(':v1.0.0@'), `stable to still run ${UNSIGNED} v1.0.0, it runs ${running}`);
  no(`${UNSIGNED} refused (SignaturePolicy): nothing copied, stable/shop/${UNSIGNED} holds only ${tags.join(', ')}`);
  more(`and stable still runs ${running.split('/').pop()}`);
}

async function deploymentImage(s: Story, cluster: string, ns: string, name: string): Promise<string> {
  const apps = kubeConfigFor(cluster, s.sample.kubeconfigPath).makeApiClient(k8s.AppsV1Api);
  const d = await apps.readNamespacedDeployment({ name, namespace: ns });
  return d.spec?.template.spec?.containers[0]?.image ?? '';
}

async function registryTags(host: string, repo: string): Promise<string[]> {
  const res = await fetch(`http://${host}/v2/${repo}/tags/list`);
  if (!res.ok) throw new Error(`listing tags of ${host}/${repo}: HTTP ${res.status}`);
  return ((await res.json()) as { tags?: string[] | null }).tags ?? [];
}

const wavesLine = (p: PromotionPlan) =>
  (p.status?.waves ?? [])
    .map((w) => {
      const apps = (p.status?.targets ?? [])
        .filter((t) => t.wave === w.name)
        .flatMap((t) => t.apps.map((a) => `${a.application}:${a.phase}`));
      return `${w.name} [${w.clusters.join(', ')}] ${w.phase}${apps.length ? ` (${apps.join(' ')})` : ''}`;
    })
    .join(' | ');

const waveOf = (p: PromotionPlan, name: string) => p.status?.waves?.find((w) => w.name === name);

/** Step 4: the release manager approves into prod and lets the fleet move wave by wave. */
async function stableToProd(s: Story): Promise<{ app: string; image: string; digest: string }> {
  step(
    'stable → prod: refused to the developer, approved and continued by the release manager, wave by wave',
    'Prod is approved once, by a release manager, and then moves through the fleet: the canary wave',
    'first, then a pause until someone who may continue waves lets the main wave start.',
  );
  const plan = await createPlan(s, 'stable', 'prod');
  const verdicts = await showVerdicts(s, plan);
  check(
    Object.values(verdicts).every((v) => v === 'Verified'),
    'the signatures carried into stable to verify for prod',
  );
  const denied = await approve(s, plan, 'developer', 'ship it');
  check(denied.status === 403, `the developer's approval into prod to be refused (403), got ${denied.status}`);
  no(`developer approves: HTTP 403 ${denied.body.error}`);
  const approved = await approve(s, plan, 'release-manager', 'stable looks good; canary first');
  if (!approved.ok) throw new Error(`release-manager approving: HTTP ${approved.status} ${approved.body.error}`);
  ok('release-manager approves: the plan starts with the canary wave');
  const name = plan.metadata.name;
  await watchPlan(s.read, name, (p) => waveOf(p, 'main')?.phase === 'Waiting' || isFinished(p), wavesLine);
  ok('canary wave succeeded; the main wave waits for someone with the RBAC verb continue');
  const cont = (as: 'developer' | 'release-manager') =>
    s.api<{ error?: string }>(`/plans/${s.ns}/${name}/continue`, as, { uid: plan.metadata.uid, wave: 'main' });
  const refused = await cont('developer');
  check(refused.status === 403, `the developer's continue to be refused (403), got ${refused.status}`);
  no(`developer continues: HTTP 403 ${refused.body.error}`);
  const continued = await cont('release-manager');
  if (!continued.ok) throw new Error(`release-manager continuing: HTTP ${continued.status} ${continued.body.error}`);
  ok('release-manager continues: the main wave starts');
  const done = await watchPlan(s.read, name, isFinished, wavesLine);
  check(done.status?.phase === 'Complete', `plan ${name} to complete, it ended ${done.status?.phase}`);
  check(approversOf(done) === 'release-manager', 'the release manager to be the approver into prod');
  for (const w of done.status?.waves ?? [])
    ok(
      `wave ${w.name} [${w.clusters.join(', ')}]: ${w.phase}${w.continuedBy ? `, continued by ${w.continuedBy}` : ''}`,
    );
  check(
    waveOf(done, 'main')?.continuedBy === 'release-manager',
    'the main wave to be continued by the release manager',
  );
  ok(`plan ${name}: Complete, approved by ${approversOf(done)}`);
  const apps = await s.api<ListResponse<ApplicationView>>(`/applications?namespace=${s.ns}`, 'developer');
  console.log(versionTable(apps.body.items, ['dev', 'stable', 'prod']));
  const first = done.status?.apps?.[0];
  check(first?.targetTag && first.digest, 'a promoted app with its tag and digest');
  return {
    app: first.application,
    image: `${s.sample.registries.release}/prod/shop/${first.application}:${first.targetTag}`,
    digest: first.digest,
  };
}

/** Step 5: the signed record of the promotion, checked with the public keys alone. */
async function theRecord(s: Story, promoted: { app: string; image: string; digest: string }) {
  step(
    'The record: every promotion is signed',
    'kpromo attached to each promoted image an in-toto statement (who requested, who approved, from',
    "where to where) signed with the platform's promotion key. Anyone holding the public keys can",
    'check the chain, with kpromo or with cosign.',
  );
  const rel = (f: string) => relative(REPO_ROOT, f);
  const args = [
    'verify',
    promoted.image,
    '--key',
    rel(s.keys.promotionPub),
    '--signature-key',
    rel(s.keys.build.pub),
    '--to',
    'prod',
    '--insecure',
  ];
  next(`./kpromo ${args.join(' ')}`);
  const r = await run(process.execPath, [join(REPO_ROOT, 'cli/bin/kpromo.mjs'), ...args]);
  console.log(indent(r.out));
  check(r.code === 0, `kpromo verify to exit 0, it exited ${r.code}: ${r.out.slice(-500)}`);
  ok('kpromo verify: exit 0');
  const image = `${promoted.image.split(':').slice(0, -1).join(':')}@${promoted.digest}`;
  const c = await cosign(
    [
      'verify-attestation',
      '--key',
      s.keys.promotionPub,
      '--insecure-ignore-tlog',
      '--type',
      PROMOTION_PREDICATE_TYPE,
      '--allow-insecure-registry',
      '--allow-http-registry',
      image,
    ],
    { cwd: s.keys.dir, password: COSIGN_PASSWORD },
  );
  check(c.code === 0, `cosign verify-attestation to agree: ${c.stderr.slice(-500)}`);
  ok('cosign verify-attestation --key kpromo.pub --type https://kpromo.dev/promotion/v1 agrees: exit 0');
}

function run(bin: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** Step 6: the portal, the CLI, the API and MCP on what just happened, with the tokens to use. */
function whereToLook(s: Story) {
  step(
    'Where to look next',
    'Everything above is plain Kubernetes objects: every door shows the same, as you or as the demo people.',
  );
  const rel = (f: string) => relative(REPO_ROOT, f);
  const token = (who: string) => `$(cat ${rel(join(s.people.dir, `${who}.token`))})`;
  const port = s.running.port;
  ok(`CLI, as the clusters' admin: export KUBECONFIG=${rel(s.sample.kubeconfigPath)}`);
  console.log(`        ./kpromo apps -n ${s.ns} --context dev        # versions per environment, prod per cluster`);
  console.log(`        ./kpromo plan list -n ${s.ns} --context dev   # who asked, who approved`);
  console.log(`        ./kpromo plan get NAME -n ${s.ns} --context dev   # waves, signatures, attestations`);
  ok(`API: curl -H "Authorization: Bearer ${token('developer')}" localhost:${port}/api/v1/plans?namespace=${s.ns}`);
  if (s.running.mcp)
    ok(
      `MCP (Streamable HTTP) for agents: ${s.running.mcp.url} with the header Authorization: Bearer ${token('release-manager')}`,
    );
  ok(`tokens: ${rel(join(s.people.dir, 'developer.token'))}, ${rel(join(s.people.dir, 'release-manager.token'))}`);
  ok('portal: ./kpromo portal, then http://localhost:7007/promotions (Enter signs in as guest);');
  console.log('        it runs its own copy of the sample release in namespace kpromo-portal on these clusters');
  ok(
    'Port, with your Port credentials: the exporter mirrors these objects into Port (docs/portals.md, "Port on the demo")',
  );
  console.log(
    '        PORT_CLIENT_ID=… PORT_CLIENT_SECRET=… ./kpromo yarn workspace @kpromo/exporter start ../examples/port/demo-exporter.yaml',
  );
  console.log('    (the API and MCP answer while the demo runs; Ctrl-C stops it, `yarn cluster stop` the clusters)');
}
