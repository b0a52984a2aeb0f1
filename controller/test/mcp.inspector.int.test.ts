import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { applyCrds, kubeConfigFor, REPO_ROOT, waitFor } from '@kpromo/test-harness';
import { applyCr, deleteNs, ensureNs, restFor } from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Access } from '../src/api/access.js';
import { Authorizer } from '../src/auth/authorizer.js';
import { AUTH_DEFAULTS } from '../src/auth/config.js';
import { httpAuthFrom } from '../src/auth/httpAuth.js';
import { ClusterClients } from '../src/kube/clusters.js';
import { LiveCache } from '../src/kube/liveCache.js';
import { McpConfigSchema } from '../src/mcp/config.js';
import { type McpHttp, startMcpHttp } from '../src/mcp/http.js';
import { createLogger } from '../src/observability/logger.js';
import { BUILTIN_WORKLOAD_KINDS } from '../src/rollout/registry.js';

// The MCP Inspector's CLI (`@modelcontextprotocol/inspector --cli`, the client most people debug
// servers with) against the server, in both protocol eras it can pick with --protocol-era:
// `modern` (2026-07-28, stateless) and `legacy` (2025-11-25, initialize + Mcp-Session-Id). The
// Inspector is not a workspace dependency (it brings a web UI, a TUI and a native keyring): the
// pinned version is installed once with npm (--ignore-scripts) into the build cache and reused.
// Which era was really spoken is read from the server's audit lines: legacy calls carry a
// session id, modern ones do not.

const INSPECTOR_VERSION = '2.12.0';
const RUN = Math.random().toString(36).slice(2, 7);
const NS = `mcp-insp-${RUN}`;
const TOKEN = `inspector-${RUN}-0123456789abcdef`;
const kubeconfig = inject('kubeconfig');
const dev = restFor(kubeconfig, 'dev');
const run = promisify(execFile);

const auditLines: string[] = [];
let cache: LiveCache;
let mcp: McpHttp;
let inspectorBin = '';
let home = '';

/** The pinned Inspector in $PROMO_CACHE_DIR/npm-tools, installed on first use (atomically: temp dir, then rename). */
async function ensureInspector(): Promise<string> {
  const root = join(process.env.PROMO_CACHE_DIR ?? join(REPO_ROOT, '.cache'), 'npm-tools');
  const dir = join(root, `inspector-${INSPECTOR_VERSION}`);
  const bin = join(dir, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
  if (existsSync(bin)) return bin;
  mkdirSync(root, { recursive: true });
  const tmp = mkdtempSync(join(root, `.inspector-${INSPECTOR_VERSION}-`));
  await run(
    'npm',
    [
      'install',
      '--prefix',
      tmp,
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `@modelcontextprotocol/inspector@${INSPECTOR_VERSION}`,
    ],
    { timeout: 600_000 },
  );
  try {
    renameSync(tmp, dir);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (!existsSync(bin)) throw e;
  }
  return bin;
}

type Era = 'modern' | 'legacy';

/** Runs the Inspector CLI against the server (with the token unless null) in a throwaway HOME. */
function runInspector(era: Era, args: string[], token: string | null = TOKEN) {
  const argv = [
    inspectorBin,
    '--cli',
    '--server-url',
    mcp.url,
    '--transport',
    'http',
    '--protocol-era',
    era,
    ...(token ? ['--header', `Authorization: Bearer ${token}`] : []),
    '--format',
    'json',
    ...args,
  ];
  // The Inspector keeps a catalog, client config and secrets under ~/.mcp-inspector.
  const env = {
    ...process.env,
    HOME: home,
    MCP_CATALOG_PATH: join(home, 'mcp.json'),
    MCP_CLIENT_CONFIG_PATH: join(home, 'client.json'),
  };
  return run(process.execPath, argv, { env, timeout: 60_000 });
}

/** One Inspector CLI call; the method's result, or a failure carrying what the Inspector printed. */
async function inspect(era: Era, args: string[]): Promise<Record<string, unknown>> {
  try {
    const { stdout } = await runInspector(era, ['--quiet', ...args]);
    // --format json: one object, the method's result under `result`.
    return (JSON.parse(stdout) as { result: Record<string, unknown> }).result;
  } catch (e) {
    const x = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`inspector ${era} ${args.join(' ')} failed: ${x.message}\n${x.stdout ?? ''}\n${x.stderr ?? ''}`);
  }
}

const toolAudits = () =>
  auditLines
    .flatMap((l) => l.split('\n'))
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.audit && l.msg === 'mcp tool call');

beforeAll(async () => {
  inspectorBin = await ensureInspector();
  home = mkdtempSync(join(tmpdir(), 'inspector-home-'));
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, NS);
  await applyCr(dev, {
    kind: 'Application',
    metadata: { name: 'cart', namespace: NS },
    spec: {
      owner: 'team-a',
      image: { repository: `insp${RUN}/cart` },
      workloads: [{ kind: 'Deployment', name: 'cart' }],
    },
  });
  const tokens = join(tmpdir(), `mcp-insp-tokens-${RUN}.yaml`);
  writeFileSync(tokens, `tokens:\n  - token: ${TOKEN}\n    username: inspector\n    groups: [system:masters]\n`);
  const clients = ClusterClients.fromFile(kubeconfig, 'dev', [
    { namespaces: [NS], contexts: ['dev'], kubeconfigSecrets: [], inCluster: false, targetNamespaces: [] },
  ]);
  cache = new LiveCache(clients, [NS], { workloadKinds: BUILTIN_WORKLOAD_KINDS });
  await cache.start(AbortSignal.timeout(30_000));
  await waitFor('cart cached', async () => !!cache.getApplication(NS, 'cart'), 30_000);
  const authorizer = new Authorizer(clients.control);
  mcp = await startMcpHttp(
    { cache, control: clients.control, access: new Access(authorizer), namespace: NS },
    McpConfigSchema.parse({ enabled: true, port: 0 }),
    {
      log: createLogger({ level: 'info', destination: { write: (s: string) => void auditLines.push(s) } }),
      auth: httpAuthFrom(clients.control, { ...AUTH_DEFAULTS, staticTokensFile: tokens }, authorizer),
    },
  );
}, 900_000);

afterAll(async () => {
  await mcp?.close();
  cache?.stop();
  if (home) rmSync(home, { recursive: true, force: true });
  await deleteNs(dev, NS);
});

describe(`MCP Inspector ${INSPECTOR_VERSION} CLI against the server`, () => {
  for (const era of ['modern', 'legacy'] as const) {
    it(`${era} era: tools/list, resources/list and a tools/call of list`, async () => {
      const tools = (await inspect(era, ['--method', 'tools/list'])) as { tools: Array<{ name: string }> };
      expect(tools.tools.map((t) => t.name).sort()).toEqual([
        'continue_wave',
        'diff',
        'dora',
        'history',
        'line_stops',
        'list',
        'plan',
        'promote',
        'propose_adoption',
        'resume_line',
        'rollback',
        'state',
        'stop_line',
      ]);

      const resources = (await inspect(era, ['--method', 'resources/list'])) as { resources: Array<{ uri: string }> };
      expect(resources.resources.map((r) => r.uri)).toContain(`promotion://applications/${NS}/cart`);

      const before = toolAudits().length;
      const called = (await inspect(era, [
        '--method',
        'tools/call',
        '--tool-name',
        'list',
        '--tool-args-json',
        JSON.stringify({ namespace: NS }),
      ])) as { isError?: boolean; structuredContent?: { applications: Array<{ name: string }> } };
      expect(called.isError ?? false).toBe(false);
      expect(called.structuredContent?.applications.map((a) => a.name)).toEqual(['cart']);

      const audit = toolAudits().slice(before);
      expect(audit.map((l) => [l.tool, l.user, l.result])).toEqual([['list', 'inspector', 'ok']]);
      // 2025-11-25 runs in a session; 2026-07-28 is stateless.
      if (era === 'legacy') expect(audit[0].session).toEqual(expect.any(String));
      else expect(audit[0]).not.toHaveProperty('session');
    });
  }

  it('without a token the Inspector is refused (the server answers 401)', async () => {
    const err = await runInspector('modern', ['--stored-auth-only', '--method', 'tools/list'], null).then(
      () => undefined,
      (e: { code?: number; stdout?: string; stderr?: string }) => e,
    );
    // --stored-auth-only: no interactive OAuth; the Inspector reports the 401 as auth_required (exit 3).
    expect(err?.code).toBe(3);
    expect(JSON.parse(err?.stderr ?? '{}')).toMatchObject({
      error: { code: 'auth_required', message: expect.stringMatching(/HTTP 401/) },
    });
  });
});
