import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
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
import { deleteNs, ensureNs, restFor } from './e2eHelpers.js';

// The conformance runner cannot send an Authorization header, so it talks to the server through a
// tiny proxy that adds a static token and keeps Host/Origin as sent (the DNS-rebinding scenario
// still reaches the server's own checks).
const RUN = Math.random().toString(36).slice(2, 7);
const NS = `mcp-conf-${RUN}`;
const TOKEN = `conformance-${RUN}-0123456789abcdef`;
const kubeconfig = inject('kubeconfig');
const dev = restFor(kubeconfig, 'dev');
const require = createRequire(import.meta.url);
const CONFORMANCE_BIN = join(
  dirname(require.resolve('@modelcontextprotocol/conformance/package.json')),
  'dist/index.js',
);

let cache: LiveCache;
let mcp: McpHttp;
let proxy: Server;
let proxyPort = 0;

beforeAll(async () => {
  await ensureNs(dev, NS);
  const tokens = join(tmpdir(), `mcp-conf-tokens-${RUN}.yaml`);
  writeFileSync(tokens, `tokens:\n  - token: ${TOKEN}\n    username: conformance\n    groups: [system:masters]\n`);
  proxy = createServer((req, res) => {
    const up = request(
      {
        host: '127.0.0.1',
        port: mcp.port,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, authorization: `Bearer ${TOKEN}` },
      },
      (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
      },
    );
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  proxyPort = (proxy.address() as { port: number }).port;
  const clients = ClusterClients.fromFile(kubeconfig, 'dev', [
    { namespaces: [NS], contexts: ['dev', 'stable', 'prod'], kubeconfigSecrets: [], inCluster: false },
  ]);
  cache = new LiveCache(clients, [NS]);
  await cache.start(AbortSignal.timeout(30_000));
  const authorizer = new Authorizer(clients.control);
  mcp = await startMcpHttp(
    { cache, control: clients.control, access: new Access(authorizer), namespace: NS },
    McpConfigSchema.parse({
      enabled: true,
      port: 0,
      allowedHosts: [`localhost:${proxyPort}`, `127.0.0.1:${proxyPort}`],
    }),
    {
      log: createLogger({ level: 'silent' }),
      auth: httpAuthFrom(clients.control, { ...AUTH_DEFAULTS, staticTokensFile: tokens }, authorizer),
    },
  );
});

afterAll(async () => {
  await mcp?.close();
  proxy?.closeAllConnections();
  await new Promise<void>((r) => (proxy ? proxy.close(() => r()) : r()));
  cache?.stop();
  await deleteNs(dev, NS);
});

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

describe('@modelcontextprotocol/conformance server scenarios', () => {
  it('passes the scenarios a promotion server can pass', async () => {
    const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
    const r = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const p = spawn(
        process.execPath,
        [CONFORMANCE_BIN, 'server', '--url', `http://localhost:${proxyPort}/mcp`, '-o', out],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      p.stdout.on('data', (d) => {
        stdout += d;
      });
      p.stderr.on('data', (d) => {
        stdout += d;
      });
      p.on('close', (code) => resolve({ code, stdout }));
    });
    const scenarios: Record<string, Check[]> = {};
    for (const d of readdirSync(out)) {
      const f = join(out, d, 'checks.json');
      try {
        scenarios[d.replace(/^server-/, '').replace(/-\d{4}-.*$/, '')] = JSON.parse(readFileSync(f, 'utf8')) as Check[];
      } catch {
        // scenario without checks file
      }
    }
    const passed = Object.entries(scenarios)
      .filter(([, cs]) => cs.every((c) => c.status !== 'FAILURE'))
      .map(([n]) => n)
      .sort();
    const failed = Object.entries(scenarios)
      .filter(([, cs]) => cs.some((c) => c.status === 'FAILURE'))
      .map(([n, cs]) => `${n}: ${cs.find((c) => c.status === 'FAILURE')?.errorMessage ?? ''}`.slice(0, 200))
      .sort();
    // The runner's own per-scenario lines look like a test runner's closing line ("N passed, N
    // failed"); keep them out of the suite's output and print only the summary.
    console.log(
      `[conformance] exit ${r.code}; scenarios passing ${passed.length}/${Object.keys(scenarios).length}: ${passed.join(', ')}\n[conformance] not passing:\n  ${failed.join('\n  ')}`,
    );
    rmSync(out, { recursive: true, force: true });
    // 30 active scenarios in 0.1.16. The 20 that fail call the conformance fixture's own tools,
    // prompts and resources (test_image_content, test://static-text, ...) or features this server
    // does not offer (completion, subscriptions, sampling/progress/logging inside tools).
    expect(Object.keys(scenarios), `conformance runner output:\n${r.stdout.slice(-3000)}`).toHaveLength(30);
    expect(passed).toEqual([
      'dns-rebinding-protection',
      'logging-set-level',
      'ping',
      'prompts-list',
      'resources-list',
      'server-initialize',
      'server-sse-multiple-streams',
      'tools-call-error',
      'tools-call-simple-text',
      'tools-list',
    ]);
  });
});
