import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createLogger, parseConfig, runExporter } from '@kpromo/exporter';
import { describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { needComponents } from './cluster/need.js';
import { REPO_ROOT } from './cluster/paths.js';
import { PortStandIn, type StoredEntity } from './port/standIn.js';

// The story signs its images with cosign (and checks the promotion's record with it) and verifies
// releases in stable against a real Prometheus.
await needComponents('cosign', 'prometheus');

/** `yarn demo <args> --once` in its own namespace and ports: exit code and everything it printed. */
async function demo(namespace: string, ...args: string[]): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // 0: the registries pick free ports themselves and pick again if one is taken before they bind
    // (a port found free here could be taken by the files running beside this one).
    KPROMO_DEMO_REGISTRY_PORT: '0',
    KPROMO_LOG_LEVEL: 'warn',
  };
  delete env.KUBECONFIG; // no kubeconfig given = local control plane mode
  const tsx = join(REPO_ROOT, 'node_modules/tsx/dist/cli.mjs');
  const child = spawn(
    process.execPath,
    [tsx, join(REPO_ROOT, 'scripts/demo.ts'), ...args, '--once', '--port', '0', '--namespace', namespace],
    { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  // Colours off for the assertions: the demo prints them for a terminal.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences
  return { code, out: out.replace(/\x1b\[[0-9;]*m/g, '') };
}

/** The text printed from the line matching `from` up to the next step's heading. */
const stepText = (out: string, from: RegExp) => {
  const start = out.search(from);
  expect(start, `no step ${from} in:\n${out.slice(-3000)}`).toBeGreaterThanOrEqual(0);
  const rest = out.slice(start + 1);
  const end = rest.search(/\n\[\d+\/\d+\] /);
  return end < 0 ? rest : rest.slice(0, end);
};

// The README's first command: `yarn demo` (here with --once) must take a newcomer from nothing to
// the whole story on the local clusters, each step's outcome checked here.
/** The story's namespace: the Port test below exports what the story left in it. */
const STORY_NS = 'demo-test';

describe('yarn demo --once', () => {
  it('tells the story: a prod fleet, signed releases, the right approvers, waves, a rollback, a line stop, and a verified record', async () => {
    const { code, out } = await demo(STORY_NS);
    expect(code, out.slice(-3000)).toBe(0);

    const estate = stepText(out, /\[1\/\d+\] The estate/);
    expect(estate).toContain('prod: a fleet of 2 entries, prod-canary (namespace demo-test-canary) and prod-main');

    const signing = stepText(out, /\[2\/\d+\] Signed releases/);
    expect(signing).toContain('signed checkout, cart, search v1.1.0 in the dev registry');
    expect(signing).toContain('ledger v1.1.0 was pushed by hand');

    // The approver sees the verdict before approving; the unsigned candidate is refused with nothing copied.
    const stable = stepText(out, /\[3\/\d+\] dev → stable/);
    const verdict = stable.search(/ledger\s+✖ Not signed Unsigned\s+signature: none found/);
    expect(verdict, stable).toBeGreaterThan(0);
    expect(verdict).toBeLessThan(stable.indexOf('the developer approves'));
    expect(stable).toMatch(/plan shop-stable-\S+: Incomplete, approved by developer/);
    expect(stable).toMatch(/ledger\s+Failed\s+SignaturePolicy: .*nothing was copied/);
    expect(stable).toContain('ledger refused (SignaturePolicy): nothing copied, stable/shop/ledger holds only v1.0.0');
    for (const app of ['checkout', 'cart', 'search'])
      expect(stable).toMatch(new RegExp(`${app}\\s+Succeeded\\s+v1\\.1\\.0-\\d{8}T\\d{6}Z`));

    // Prod: refused to the developer (approve and continue), approved and continued by the release manager, in waves.
    const prod = stepText(out, /\[4\/\d+\] stable → prod/);
    expect(prod).toMatch(/search\s+✔ Signed\s+Verified/);
    expect(prod).toContain(
      'developer approves: HTTP 403 forbidden: developer may not approve plans into environment prod',
    );
    expect(prod).toContain('developer continues: HTTP 403 forbidden: developer may not continue plans');
    const canary = prod.indexOf('wave canary [prod-canary]: Succeeded');
    const main = prod.indexOf('wave main [prod-main]: Succeeded, continued by release-manager');
    expect(canary, prod).toBeGreaterThan(0);
    expect(main).toBeGreaterThan(canary);
    expect(prod).toMatch(/plan shop-prod-\S+: Complete, approved by release-manager/);
    expect(prod).toMatch(/application\s+dev\s+stable\s+prod/);
    expect(prod).toMatch(/checkout\s+v1\.1\.0 (✓|\w+)\s+v1\.1\.0-\d{8}T\d{6}Z (✓|\w+)\s+v1\.1\.0-\d{8}T\d{6}Z (✓|\w+)/);
    expect(prod).toMatch(/ledger\s+v1\.1\.0 (✓|\w+)\s+v1\.0\.0 (✓|\w+)\s+v1\.0\.0/);

    // A bad release: cart's verification fails in Prometheus, and the whole release rolls back by itself.
    const bad = stepText(out, /\[5\/\d+\] A bad release/);
    expect(bad).toMatch(
      /cart: VerificationFailed: verification failed: check error-rate failed \(last value [\d.]+, must be ≤ 0\.05\)/,
    );
    expect(bad).toMatch(
      /the controller rolls the release back itself: plan shop-stable-\S+-bad-rollback-\S+ \(release; caused by error-rate of cart\)/,
    );
    expect(bad).toMatch(
      /RolledBack, requested and approved by nobody; caused-by: verification of cart \(check error-rate\)/,
    );
    expect(bad).toContain('stable runs cart and search on their previous digests again');

    // The line stop: a plan held with nothing started, the hotfix through with override-freeze, then the held plan.
    const line = stepText(out, /\[6\/\d+\] An incident/);
    expect(line).toContain('release-manager stops the line: LineStop demo-test/inc-7, stopped by release-manager');
    expect(line).toMatch(/shop-stable-\S+-search is approved but waits: Pending, held by demo-test\/inc-7/);
    expect(line).toMatch(
      /shop-stable-\S+-hotfix: Complete through the stopped line \(override by release-manager\); \S+-search still waits/,
    );
    expect(line).toMatch(/shop-stable-\S+-search: Complete/);
    expect(line.indexOf('lifts the line')).toBeLessThan(line.search(/-search: Complete/));

    // The record: kpromo verify prints the chain and exits 0; cosign agrees.
    const record = stepText(out, /\[7\/\d+\] The record/);
    expect(record).toMatch(/signed\s+by cosign\.pub/);
    expect(record).toMatch(/promoted\s+stable -> prod at .* by plan demo-test\/shop-prod-/);
    expect(record).toMatch(/requested by\s+developer/);
    expect(record).toMatch(/approved by\s+release-manager \(release-managers\)/);
    expect(record).toContain('kpromo verify: exit 0');
    expect(record).toContain('agrees: exit 0');

    const look = stepText(out, /\[8\/\d+\] Where to look/);
    expect(look).toMatch(/MCP \(Streamable HTTP\) for agents: http:\/\/127\.0\.0\.1:\d+\/mcp/);
    expect(look).toContain('./kpromo portal');
    // Port's door: the exporter config the Port test below runs.
    expect(look).toContain(`./kpromo yarn workspace @kpromo/exporter start ../${DEMO_EXPORTER_CONFIG}`);
    expect(look).toContain('release-manager.token');
    expect(out).toContain('where the time went:');
    // Under load (yarn test runs files side by side) the story took 3 minutes here.
  }, 600_000);

  // Port's door on the same story: the documented exporter config, run once on what the story left
  // on the control cluster, into the Port stand-in (every request checked against Port's OpenAPI).
  it('the exporter gives Port the story: plans with verification and signatures, the automatic rollback and its cause, prod with its fleet clusters', async () => {
    const docConfig = parse(readFileSync(join(REPO_ROOT, DEMO_EXPORTER_CONFIG), 'utf8')) as {
      clusters: Array<{ name: string; context: string; kubeconfig: string }>;
    };
    // The documented command runs in exporter/ (a workspace script), and finds the demo's clusters.
    expect(resolve(REPO_ROOT, 'exporter', docConfig.clusters[0].kubeconfig)).toBe(
      join(REPO_ROOT, '.cache/clusters/kubeconfig'),
    );
    const port = new PortStandIn();
    await port.start();
    // The file as documented, but: the stand-in for Port, the harness's kubeconfig (the same clusters,
    // wherever KPROMO_STATE_DIR puts them), the story's namespace only (other test files share the
    // clusters), and one sync instead of a periodic resync.
    const cfg = await parseConfig({
      ...docConfig,
      clusters: docConfig.clusters.map((c) => ({ ...c, kubeconfig: inject('kubeconfig') })),
      port: { baseUrl: port.url, clientId: port.clientId, clientSecret: port.clientSecret },
      resyncIntervalSeconds: 0,
    });
    for (const r of cfg.resources) r.selector = { query: `.metadata.namespace == "${STORY_NS}"` };
    const running = runExporter(cfg, createLogger('silent'));
    try {
      expect(await running.resync()).toEqual({ deleted: 0 });
    } finally {
      running.stop();
      await port.stop();
    }
    expect(port.violations).toEqual([]);

    const id = (name: string) => `${docConfig.clusters[0].name}:${STORY_NS}:${name}`;
    const got = (bp: string, name: string) => {
      const e = port.entitiesOf(bp).get(id(name));
      expect(e, `${bp} ${id(name)} in Port; it has ${[...port.entitiesOf(bp).keys()].join(', ')}`).toBeDefined();
      return e as StoredEntity;
    };
    const plans = [...port.entitiesOf('kpromoPromotionPlan').values()];
    const plan = (re: RegExp) => {
      const found = plans.filter((p) => re.test(p.title ?? ''));
      expect(
        found.map((p) => p.title),
        `one plan ${re} in ${plans.map((p) => p.title).join(', ')}`,
      ).toHaveLength(1);
      return found[0];
    };

    // Environments with their clusters: prod is the fleet of two, the others one cluster each.
    const prod = got('kpromoEnvironment', 'prod');
    expect(prod.properties).toMatchObject({ clusters: ['prod-canary', 'prod-main'], clusterCount: 2 });
    expect(got('kpromoEnvironment', 'stable').properties).toMatchObject({ clusters: ['stable'], clusterCount: 1 });
    // Applications: each with the versions per environment; ledger (refused unsigned) still v1.0.0 in prod.
    for (const app of ['checkout', 'cart', 'search', 'ledger'])
      expect(got('kpromoApplication', app).relations.environments).toEqual(['dev', 'prod', 'stable'].map(id));
    const versions = (app: string) =>
      got('kpromoApplication', app).properties.versions as Record<string, { tag: string; digest: string }>;
    expect(versions('checkout').prod.tag).toMatch(/^v1\.1\.0-\d{8}T\d{6}Z$/);
    expect(versions('ledger').prod.tag).toBe('v1.0.0');

    // dev -> stable: the unsigned candidate shown Unsigned, the others Verified.
    const toStable = plan(/^shop-stable-\d{8}t\d{6}$/);
    const verdicts = (p: StoredEntity) =>
      Object.fromEntries(
        (p.properties.signatures as Array<{ application: string; verdict: string }>).map((x) => [
          x.application,
          x.verdict,
        ]),
      );
    expect(verdicts(toStable)).toEqual({
      checkout: 'Verified',
      cart: 'Verified',
      search: 'Verified',
      ledger: 'Unsigned',
    });
    // stable -> prod: approved by the release manager, signed, attested, both waves through.
    const toProd = plan(/^shop-prod-/);
    expect(toProd.properties).toMatchObject({ phase: 'Complete', approverPersons: ['release-manager'] });
    expect(verdicts(toProd)).toEqual({ checkout: 'Verified', cart: 'Verified', search: 'Verified' });
    for (const app of ['checkout', 'cart', 'search'])
      expect(toProd.properties.promotionAttestations).toMatch(new RegExp(`(^|; )${app}: signed by `));
    expect(toProd.properties.waves).toEqual([
      { name: 'canary', phase: 'Succeeded', clusters: ['prod-canary'], succeeded: 1, failed: 0 },
      { name: 'main', phase: 'Succeeded', clusters: ['prod-main'], succeeded: 1, failed: 0 },
    ]);
    expect(toProd.relations).toMatchObject({ from: id('stable'), to: id('prod') });

    // The bad release: cart's check failed in Prometheus, with the value measured; the rollback it caused.
    const bad = plan(/-bad$/);
    const rollback = plan(/-bad-rollback-/);
    const cart = (
      bad.properties.verification as Array<{ application: string; verdict: string; checks: unknown[] }>
    ).find((v) => v.application === 'cart');
    expect(cart).toMatchObject({
      verdict: 'Failed',
      checks: [{ name: 'error-rate', verdict: 'Failed', last: expect.any(Number) }],
    });
    expect((cart?.checks[0] as { last?: number } | undefined)?.last).toBeGreaterThan(0.05);
    expect(bad.properties.automaticRollbacks).toBe(`${rollback.title}: cart failed check error-rate`);
    expect(rollback.properties).toMatchObject({ action: 'rollback', phase: 'RolledBack', approverPersons: [] });
    expect(rollback.relations.applications).toEqual(expect.arrayContaining([id('cart'), id('search')]));

    // The line stop: the hotfix through with its override and reason; the held plan completed after the lift.
    expect(plan(/-hotfix$/).properties).toMatchObject({
      phase: 'Complete',
      override: expect.stringMatching(/^release-manager: INC-7: /),
    });
    const held = plan(/-search$/);
    expect(held.properties.phase).toBe('Complete');
    expect(held.properties.lineStopped ?? null).toBeNull();

    // docs/portals.md shows a trimmed sample of these entities, written from here.
    const sample = portSample([
      ['kpromoEnvironment', prod, ['tier', 'clusters', 'clusterCount']],
      ['kpromoApplication', got('kpromoApplication', 'cart'), ['owner', 'versions']],
      ['kpromoPromotionPlan', toProd, ['phase', 'approverPersons', 'signatures', 'promotionAttestations', 'waves']],
      ['kpromoPromotionPlan', bad, ['phase', 'verification', 'automaticRollbacks']],
      ['kpromoPromotionPlan', rollback, ['phase', 'action', 'approverPersons']],
    ]);
    if (process.env.KPROMO_PORT_SAMPLE === '1') writeDocSample(sample);
    expect(shape(readDocSample()), `the sample in ${PORTALS_DOC} is stale: regenerate it (${REGENERATE})`).toEqual(
      shape(sample),
    );
  }, 120_000);

  it('--quick promotes the sample release dev -> stable -> prod and nothing else', async () => {
    const { code, out } = await demo('demo-test-quick', '--quick');
    expect(code, out.slice(-3000)).toBe(0);
    expect(out.match(/: Complete \(4 succeeded, 0 failed\)/g)).toHaveLength(2);
    expect(out).toMatch(/developer approves shop-prod-\S+: HTTP 403/);
    expect(out).toMatch(/checkout\s+Succeeded\s+v1\.1\.0-\d{8}T\d{6}Z/);
    // The final versions as a table, not JSON: every app runs v1.1.0 everywhere now (✓ = Healthy).
    expect(out).toMatch(/application\s+dev\s+stable\s+prod/);
    expect(out).toMatch(/checkout\s+v1\.1\.0 (✓|\w+)\s+v1\.1\.0-\d{8}T\d{6}Z (✓|\w+)\s+v1\.1\.0-\d{8}T\d{6}Z (✓|\w+)/);
    expect(out).not.toContain('"versions"');
    expect(out).not.toContain('The estate');
    expect(out).toContain('demo finished in');
  }, 300_000);
});

/** The exporter config docs/portals.md gives for the demo; the test above runs it. */
const DEMO_EXPORTER_CONFIG = 'examples/port/demo-exporter.yaml';
const PORTALS_DOC = 'docs/portals.md';
const REGENERATE = 'KPROMO_PORT_SAMPLE=1 yarn vitest run --project integration test/demo.int.test.ts';
const SAMPLE_START = '<!-- port-demo-sample: written by test/demo.int.test.ts -->';
const SAMPLE_END = '<!-- /port-demo-sample -->';

type Sampled = {
  blueprint: string;
  identifier: string;
  title?: string;
  team?: unknown;
  properties: object;
  relations: object;
};

/**
 * The entities as Port received them, trimmed to the properties named (all relations kept), digests
 * shortened, and the test's namespace named as `./kpromo demo`'s default (kpromo-demo).
 */
function portSample(entities: Array<[blueprint: string, entity: StoredEntity, properties: string[]]>): Sampled[] {
  const sampled = entities.map(([blueprint, e, keys]) => {
    const properties = Object.fromEntries(keys.map((k) => [k, (e.properties as Record<string, unknown>)[k]]));
    return {
      blueprint,
      identifier: e.identifier,
      title: e.title,
      ...(e.team ? { team: e.team } : {}),
      properties,
      relations: e.relations,
    };
  });
  const text = JSON.stringify(sampled)
    .replace(/sha256:([0-9a-f]{12})[0-9a-f]{52}/g, 'sha256:$1…')
    .replaceAll(STORY_NS, 'kpromo-demo');
  return JSON.parse(text) as Sampled[];
}

/** What the docs' sample must keep showing: each entity's blueprint and property and relation names. */
const shape = (sample: Sampled[]) =>
  sample.map((e) => [e.blueprint, Object.keys(e.properties).sort(), Object.keys(e.relations).sort()]);

function writeDocSample(sample: Sampled[]) {
  const path = join(REPO_ROOT, PORTALS_DOC);
  const doc = readFileSync(path, 'utf8');
  const start = doc.indexOf(SAMPLE_START);
  const end = doc.indexOf(SAMPLE_END);
  if (start < 0 || end < start) throw new Error(`${PORTALS_DOC} has no ${SAMPLE_START} … ${SAMPLE_END} to write into`);
  const block = `${SAMPLE_START}\n\n\`\`\`json\n${compactJson(sample)}\n\`\`\`\n\n`;
  writeFileSync(path, doc.slice(0, start) + block + doc.slice(end));
}

function readDocSample(): Sampled[] {
  const doc = readFileSync(join(REPO_ROOT, PORTALS_DOC), 'utf8');
  const start = doc.indexOf(SAMPLE_START);
  const m = /```json\n([\s\S]*?)\n```/.exec(doc.slice(start));
  expect(start >= 0 && m, `${PORTALS_DOC}: no sample after ${SAMPLE_START}`).toBeTruthy();
  return JSON.parse(m?.[1] ?? '[]') as Sampled[];
}

/** JSON on one line, with a space after each `:` and `,` as people write it. */
function flatJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(flatJson).join(', ')}]`;
  const entries = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${flatJson(v)}`);
  return entries.length ? `{ ${entries.join(', ')} }` : '{}';
}

/** JSON indented, each value whose line fits in `WIDTH` columns on that line: short to read. */
function compactJson(value: unknown, indent = '', prefix = 0): string {
  const flat = flatJson(value);
  if (value === null || typeof value !== 'object' || indent.length + prefix + flat.length <= WIDTH) return flat;
  const inner = `${indent}  `;
  const items = Array.isArray(value)
    ? value.map((v) => `${inner}${compactJson(v, inner)}`)
    : Object.entries(value).map(([k, v]) => `${inner}${JSON.stringify(k)}: ${compactJson(v, inner, k.length + 4)}`);
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  return `${open}\n${items.join(',\n')}\n${indent}${close}`;
}
const WIDTH = 110;
