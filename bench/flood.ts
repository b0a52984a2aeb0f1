/**
 * Flood benchmark (issue 31, "staying up under attack"): junk bearer tokens at a high rate against
 * a controller process that holds its Lease and runs a plan, beside normal authenticated traffic.
 *
 *   yarn bench --only flood                         # 1,000 junk req/s for 30 s, from 1 address, then from 64
 *   yarn tsx bench/flood.ts [--rate 1000] [--seconds 30] [--apps 12] [--sources 1,64] [--valid-rate 20]
 *   BENCH_ARGS_FLOOD="--rate 2000 --seconds 20" yarn bench --only flood
 *
 * Starts (or reuses) the local clusters and two registries, seeds a release of `--apps` apps dev ->
 * stable (test/controller/faultScenario.ts, patch delivery), starts the controller as its own process
 * (`kpromo-controller run`, leader election on a 4 s Lease renewed every second, static tokens for
 * the valid traffic), and for each entry of --sources (how many loopback addresses the junk comes
 * from: 1 is one attacker, 64 a spread one that per-source limits alone do not stop) approves a plan
 * over its share of the apps and floods for --seconds while it runs. Prints per phase:
 *  - junk requests sent and their answers by status; the rate reached,
 *  - Lease renewals missed (renewTime gaps beyond twice the renew interval, from a 200 ms poll of
 *    the Lease) and leader changes (holders seen, leaseTransitions),
 *  - the plan's progress: apps Succeeded when the flood started and ended, phase at the end,
 *  - latency of valid requests (p50/p99/max; static token from the flooding address, TokenReview
 *    token from another),
 *  - apiserver requests caused by authentication (TokenReviews, SubjectAccessReviews: the controller's
 *    kpromo_tokenreviews_total / kpromo_subjectaccessreviews_total) and refusal log lines written.
 * Asserts nothing. Cleans up. `--entry <path to controller main.ts>` runs another checkout's
 * controller (e.g. a worktree of an older commit, for a before/after).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  applyCrds,
  defaultKubeconfigPath,
  ensureClusters,
  kubeConfigFor,
  REPO_ROOT,
  startRegistry,
  waitFor,
} from '@kpromo/test-harness';
import {
  appOf,
  chunk,
  getPlan,
  restFor,
  setUpFaultScenario,
  TEST_ADMIN,
  testTokensFile,
} from '@kpromo/test-harness/controller';
import { stringify } from 'yaml';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '30' },
    apps: { type: 'string', default: '12' },
    sources: { type: 'string', default: '1,64' },
    'valid-rate': { type: 'string', default: '20' },
    entry: { type: 'string', default: join(REPO_ROOT, 'controller/src/main.ts') },
    /** Internal: be the junk sender (`--junk <json>`), a child process under `nice`: see junkChild. */
    junk: { type: 'string' },
  },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const SOURCES = values.sources.split(',').map(Number);
const VALID_RATE = Number(values['valid-rate']);
const RENEW_MS = 1000;
const MAX_IN_FLIGHT = 1024;
const LEASE = 'flood-bench';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

interface Answer {
  status: number;
  ms: number;
}

function send(
  agent: Agent,
  o: { port: number; path: string; token: string; from?: string; signal?: AbortSignal },
): Promise<Answer> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: o.port,
        path: o.path,
        agent,
        localAddress: o.from,
        headers: { authorization: `Bearer ${o.token}` },
        timeout: 30_000,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
        res.on('error', () => resolve({ status: -1, ms: performance.now() - t0 }));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: -1, ms: performance.now() - t0 }));
    req.end();
  });
}

interface JunkPlan {
  port: number;
  path: string;
  rate: number;
  seconds: number;
  addresses: string[];
}
interface JunkResult {
  sent: number;
  skipped: number;
  seconds: number;
  statuses: Record<string, number>;
}

/**
 * The attacker: its own process at the lowest CPU priority (`nice -n 19`), so on this one machine
 * the junk it costs to *send* is not taken from the controller (a real attacker uses their own
 * CPUs). Open loop: `rate` per second in 10 ms ticks, at most MAX_IN_FLIGHT at once.
 */
async function junkChild(o: JunkPlan): Promise<void> {
  const agents = o.addresses.map(
    () => new Agent({ keepAlive: true, maxSockets: Math.ceil(MAX_IN_FLIGHT / o.addresses.length) }),
  );
  const statuses: Record<string, number> = {};
  let sent = 0;
  let skipped = 0;
  let inFlight = 0;
  const t0 = performance.now();
  const end = t0 + o.seconds * 1000;
  while (performance.now() < end) {
    const due = Math.floor(((performance.now() - t0) / 1000) * o.rate) - sent - skipped;
    for (let i = 0; i < due; i++) {
      if (inFlight >= MAX_IN_FLIGHT) {
        skipped++;
        continue;
      }
      const k = sent++ % o.addresses.length;
      inFlight++;
      void send(agents[k], {
        port: o.port,
        path: o.path,
        token: randomBytes(24).toString('base64url'),
        from: o.addresses[k],
      }).then((a) => {
        inFlight--;
        statuses[a.status] = (statuses[a.status] ?? 0) + 1;
      });
    }
    await sleep(10);
  }
  const seconds = (performance.now() - t0) / 1000;
  while (inFlight > 0) await sleep(50);
  for (const a of agents) a.destroy();
  const r: JunkResult = { sent, skipped, seconds, statuses };
  process.stdout.write(`${JSON.stringify(r)}\n`);
}

function startJunk(o: JunkPlan): Promise<JunkResult> {
  const child = spawn(
    'nice',
    ['-n', '19', process.execPath, '--import', 'tsx', process.argv[1], '--junk', JSON.stringify(o)],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  return new Promise((resolve, reject) =>
    child.on('close', (code) => {
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as JunkResult);
      } catch {
        reject(new Error(`junk sender exited ${code} without figures: ${out.slice(0, 500)}`));
      }
    }),
  );
}

/** The controller as its own process, like a pod: config file, log file, the port from its log. */
function startController(o: { kubeconfig: string; ns: string; appsNs: string; tokens: string }) {
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-flood-'));
  const cfg = join(dir, 'config.yaml');
  writeFileSync(
    cfg,
    stringify({
      kubeconfig: o.kubeconfig,
      context: 'dev',
      namespaces: [o.ns],
      defaultNamespace: o.ns,
      logLevel: 'info',
      server: { host: '127.0.0.1', port: 0 },
      auth: { staticTokensFile: o.tokens },
      egress: { allowedCidrs: ['127.0.0.1/32'] },
      clusterAccess: [{ namespaces: [o.ns], contexts: ['dev', 'stable', 'prod'], targetNamespaces: [o.appsNs] }],
      leaderElection: {
        enabled: true,
        namespace: o.ns,
        name: LEASE,
        identity: 'flood-bench',
        leaseDurationSeconds: 4,
        renewIntervalMs: RENEW_MS,
      },
    }),
  );
  const logFile = join(dir, 'controller.log');
  const fd = openSync(logFile, 'a');
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', values.entry, 'run', '--config', cfg], {
    cwd: REPO_ROOT,
    stdio: ['ignore', fd, fd],
    env: { ...process.env, KUBECONFIG: o.kubeconfig },
  });
  closeSync(fd);
  const lines = () =>
    readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { child, logFile, lines };
}

/**
 * TokenReviews and SubjectAccessReviews the dev apiserver has served (apiserver_request_total, every
 * client: also counts a controller that exports no metric of its own, e.g. an older one via --entry).
 */
function apiserverReviews(kubeconfig: string): { tokenreviews: number; subjectaccessreviews: number } {
  const text = execFileSync('kubectl', ['--kubeconfig', kubeconfig, '--context', 'dev', 'get', '--raw', '/metrics'], {
    encoding: 'utf8',
    maxBuffer: 256 * 2 ** 20,
  });
  const sum = (resource: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith('apiserver_request_total{') && l.includes(`resource="${resource}"`))
      .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  return { tokenreviews: sum('tokenreviews'), subjectaccessreviews: sum('subjectaccessreviews') };
}

async function main(): Promise<void> {
  await ensureClusters({ log: () => {} });
  const kubeconfig = process.env.KUBECONFIG ?? defaultKubeconfigPath();
  const dev = restFor(kubeconfig, 'dev');
  const stable = restFor(kubeconfig, 'stable');
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  const source = await startRegistry({ name: 'flood-source' });
  const target = await startRegistry({ name: 'flood-target' });
  const RUN = Math.random().toString(36).slice(2, 6);
  const ns = `flood-bench-${RUN}`;
  const appsNs = `${ns}-apps`;
  const s = await setUpFaultScenario({
    dev,
    stable,
    ns,
    appsNs,
    source: source.host,
    target: target.host,
    apps: Number(values.apps),
    delivery: 'patch',
    seed: `flood${RUN}`,
    concurrency: 1,
  });
  const ctl = startController({ kubeconfig, ns, appsNs, tokens: testTokensFile() });
  try {
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${LEASE}`;
    type Lease = { spec?: { holderIdentity?: string; renewTime?: string; leaseTransitions?: number } };
    const port = await waitFor(
      'the controller leads and listens',
      async () => {
        const started = ctl.lines().find((l) => l.msg === 'controller started');
        const l = await dev.getOrUndefined<Lease>(leasePath);
        return started && l?.spec?.holderIdentity === 'flood-bench' ? (started.port as number) : undefined;
      },
      120_000,
    );
    const metric = async (name: string, labels = '') => {
      const agent = new Agent();
      const text = await new Promise<string>((resolve, reject) => {
        request(
          {
            host: '127.0.0.1',
            port,
            path: '/metrics',
            agent,
            headers: { authorization: `Bearer ${TEST_ADMIN.token}` },
          },
          (res) => {
            let b = '';
            res.on('data', (c: Buffer) => (b += c.toString('utf8')));
            res.on('end', () => resolve(b));
          },
        )
          .on('error', reject)
          .end();
      });
      agent.destroy();
      return text
        .split('\n')
        .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(labels))
        .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
    };
    // A ServiceAccount token for the kpromo audience: valid traffic that goes through TokenReview.
    await dev.create(`/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'flood-client' } });
    const saToken = (
      await dev.create<{ status: { token: string } }>(`/api/v1/namespaces/${ns}/serviceaccounts/flood-client/token`, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { audiences: ['kpromo'], expirationSeconds: 3600 },
      })
    ).status.token;
    const groups = chunk(s.apps, SOURCES.length);
    console.log(
      `flood: controller ${values.entry === join(REPO_ROOT, 'controller/src/main.ts') ? 'of this checkout' : values.entry}, Lease 4 s renewed every ${RENEW_MS} ms; ${RATE} junk req/s for ${SECONDS} s per phase; valid ${VALID_RATE} req/s`,
    );

    for (const [phase, sources] of SOURCES.entries()) {
      const addresses = Array.from({ length: sources }, (_, i) => `127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`);
      const before = {
        reviews: await metric('kpromo_tokenreviews_total'),
        sars: await metric('kpromo_subjectaccessreviews_total'),
        renewFailed: await metric('kpromo_lease_renewals_total', 'result="failed"'),
        lines: ctl.lines().length,
        apiserver: apiserverReviews(kubeconfig),
        lease: (await dev.get<Lease>(leasePath)).spec,
      };
      const [plan] = await s.approvePlans(`flood-${phase}`, [groups[phase]]);
      const succeeded = async () => {
        const p = await getPlan(dev, ns, plan);
        return { n: groups[phase].filter((a) => appOf(p, a)?.phase === 'Succeeded').length, phase: p.status?.phase };
      };
      // Lease watch: every renewTime and holder seen.
      const renewTimes: number[] = [];
      const holders = new Set<string | undefined>();
      const watchStart = Date.now();
      let watching = true;
      const watcher = (async () => {
        while (watching) {
          const l = (await dev.getOrUndefined<Lease>(leasePath).catch(() => undefined))?.spec;
          holders.add(l?.holderIdentity);
          const t = l?.renewTime ? new Date(l.renewTime).getTime() : undefined;
          if (t && t !== renewTimes.at(-1)) renewTimes.push(t);
          await sleep(200);
        }
      })();
      const startProgress = await succeeded();
      await metric('nodejs_eventloop_lag_max_seconds'); // prom-client resets the event-loop histogram on each scrape
      const load0 = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      // Junk from another process; valid traffic from here: a static token from the (first) flooding
      // address, every 10th request a TokenReview token from another address.
      const junk = startJunk({ port, path: `/api/v1/flows?namespace=${ns}`, rate: RATE, seconds: SECONDS, addresses });
      const valid: Answer[] = [];
      const reviewed: Answer[] = [];
      const pending: Promise<unknown>[] = [];
      const validAgent = new Agent({ keepAlive: true });
      const t0 = performance.now();
      for (let n = 0; performance.now() < t0 + SECONDS * 1000; n++) {
        pending.push(
          n % 10 === 9
            ? send(validAgent, { port, path: `/api/v1/flows?namespace=${ns}`, token: saToken, from: '127.0.9.9' }).then(
                (a) => reviewed.push(a),
              )
            : send(validAgent, {
                port,
                path: `/api/v1/plans?namespace=${ns}`,
                token: TEST_ADMIN.token,
                from: addresses[0],
              }).then((a) => valid.push(a)),
        );
        await sleep(1000 / VALID_RATE);
      }
      const j = await junk;
      await Promise.all(pending);
      const loopMaxMs = (await metric('nodejs_eventloop_lag_max_seconds')) * 1000;
      const load1 = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      const endProgress = await succeeded();
      watching = false;
      await watcher;
      const watchEnd = Date.now();
      validAgent.destroy();
      // The plan after the flood: how long it still needs.
      const done = await waitFor(
        'the plan finishes',
        async () => {
          const p = await succeeded();
          return p.phase === 'Complete' || p.phase === 'Incomplete' || p.phase === 'Failed' ? p : undefined;
        },
        300_000,
      ).catch(() => undefined);
      const after = (await dev.get<Lease>(leasePath)).spec;
      // Gaps between renewals seen, and from the start of the watch to the first / the last to its end.
      const edges = [watchStart, ...renewTimes, watchEnd];
      const gaps = edges.slice(1).map((t, i) => t - edges[i]);
      const missed = gaps.reduce((n, g) => n + Math.max(0, Math.round(g / RENEW_MS) - 1), 0);
      const lines = ctl.lines().slice(before.lines);
      const lostLeadership = lines.filter((l) => l.msg === 'stopped leading').length;
      const refusalLines = lines.filter((l) => l.result === 'refused' || /refused/.test(String(l.msg ?? ''))).length;
      const ok = (xs: Answer[]) => xs.filter((a) => a.status === 200).length;
      const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
      console.log(`\nphase ${phase + 1}: junk from ${sources} address(es) for ${j.seconds.toFixed(1)} s`);
      console.log(
        `  junk sent ${j.sent} (${(j.sent / j.seconds).toFixed(0)} req/s; ${j.skipped} not sent: ${MAX_IN_FLIGHT} in flight), answers ${JSON.stringify(j.statuses)}`,
      );
      console.log(
        `  Lease renewals seen ${renewTimes.length}, missed ${missed} (largest gap ${gaps.length ? Math.max(...gaps) : '-'} ms), renew errors ${(await metric('kpromo_lease_renewals_total', 'result="failed"')) - before.renewFailed}; leader changes ${Math.max(holders.size - 1, (after?.leaseTransitions ?? 0) - (before.lease?.leaseTransitions ?? 0))} (holders seen: ${[...holders].join(', ')}), leadership lost ${lostLeadership} times ("stopped leading" in the log)`,
      );
      console.log(
        `  plan ${plan} (${groups[phase].length} apps): ${startProgress.n} Succeeded at flood start, ${endProgress.n} at its end (phase ${endProgress.phase ?? 'Pending'}); ${done ? `finished ${done.phase}` : 'not finished within 300 s after'}`,
      );
      console.log(
        `  valid requests (static token, flooding address): ${ok(valid)}/${valid.length} 200, p50 ${f(
          pct(
            valid.map((a) => a.ms),
            50,
          ),
        )} ms, p99 ${f(
          pct(
            valid.map((a) => a.ms),
            99,
          ),
        )} ms, max ${f(Math.max(...valid.map((a) => a.ms)))} ms`,
      );
      console.log(
        `  valid requests (TokenReview token, other address): ${reviewed.filter((a) => a.status !== 401 && a.status !== 429 && a.status > 0).length}/${reviewed.length} authenticated, p99 ${f(
          pct(
            reviewed.map((a) => a.ms),
            99,
          ),
        )} ms`,
      );
      console.log(
        `  controller event-loop delay max ${loopMaxMs.toFixed(0)} ms; machine load average ${load0} -> ${load1} (${cpus().length} cores)`,
      );
      const served = apiserverReviews(kubeconfig);
      console.log(
        `  apiserver requests caused: TokenReviews ${(await metric('kpromo_tokenreviews_total')) - before.reviews}, SubjectAccessReviews ${(await metric('kpromo_subjectaccessreviews_total')) - before.sars} (controller metrics); the dev apiserver served ${served.tokenreviews - before.apiserver.tokenreviews} TokenReviews and ${served.subjectaccessreviews - before.apiserver.subjectaccessreviews} SubjectAccessReviews meanwhile (all clients); refusal log lines ${refusalLines}`,
      );
    }
  } finally {
    ctl.child.kill('SIGKILL');
    await s.cleanup().catch(() => undefined);
    await source.stop();
    await target.stop();
  }
}

// Wrapped in main(): the root package is CommonJS, where top-level await is unavailable.
void (values.junk ? junkChild(JSON.parse(values.junk) as JunkPlan) : main()).catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
