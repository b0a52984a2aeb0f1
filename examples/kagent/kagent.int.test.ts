import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyManifest, kubeConfigFor, REPO_ROOT, waitFor } from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KubeError, KubeRest } from '../../controller/src/kube/rest.js';
import { agentTools, examples, kagentCrds, type Manifest } from './manifests.js';

// The example objects go to a real kube-apiserver (the dev cluster) with kagent's CRDs (v0.9.12,
// vendored in schema/) installed, as server-side dry runs with strict field validation: the
// apiserver applies the published OpenAPI schema, the CEL rules and refuses unknown fields, and
// nothing is stored. kagent's controller is not run here (it needs a model provider): that the
// agent then works is not checked. The tool names are checked against what kpromo's MCP server
// (kpromo-controller mcp --stdio) lists.

const RUN = Math.random().toString(36).slice(2, 7);
const NS = { kagent: `kagent-${RUN}`, kpromo: `kpromo-${RUN}` };
const kubeconfig = inject('kubeconfig');
const kc = kubeConfigFor('dev', kubeconfig);
const dev = new KubeRest(kc, 'dev');

/** The example in the test namespaces (the files use kagent and kpromo). */
function relocate(m: Manifest): Manifest {
  const s = JSON.stringify(m)
    .replaceAll('"namespace":"kagent"', `"namespace":"${NS.kagent}"`)
    .replaceAll('"namespace":"kpromo"', `"namespace":"${NS.kpromo}"`);
  return JSON.parse(s) as Manifest;
}

function pathFor(m: Manifest): string {
  const [group, version] = m.apiVersion.includes('/') ? m.apiVersion.split('/') : ['', m.apiVersion];
  const plural: Record<string, string> = {
    ServiceAccount: 'serviceaccounts',
    Secret: 'secrets',
    RoleBinding: 'rolebindings',
    RemoteMCPServer: 'remotemcpservers',
    Agent: 'agents',
  };
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  return `${base}/namespaces/${m.metadata.namespace}/${plural[m.kind]}`;
}

/** POST as a server-side dry run with strict field validation; the apiserver's refusal, if any. */
async function dryRunCreate(m: Manifest): Promise<string | undefined> {
  try {
    await dev.request('POST', pathFor(m), { body: m, query: { dryRun: 'All', fieldValidation: 'Strict' } });
    return undefined;
  } catch (e) {
    if (e instanceof KubeError && (e.status === 422 || e.status === 400)) return e.message;
    throw e;
  }
}

beforeAll(async () => {
  for (const crd of kagentCrds()) await applyManifest(kc, crd as k8s.KubernetesObject, 'kpromo-test-kagent');
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  for (const crd of kagentCrds())
    await waitFor(`${crd.metadata.name} Established`, async () => {
      const c = await ext.readCustomResourceDefinition({ name: crd.metadata.name });
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
  for (const ns of Object.values(NS))
    await dev.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});

afterAll(async () => {
  for (const ns of Object.values(NS)) await dev.delete(`/api/v1/namespaces/${ns}`).catch(() => undefined);
  // The CRDs stay: other runs reuse them, and deleting a CRD while another run applies it races.
});

describe('examples/kagent on a real kube-apiserver with kagent v0.9.12 CRDs', () => {
  it('every example object is accepted (schema, CEL rules, no unknown fields)', async () => {
    const objs = examples().map(relocate);
    expect(objs.map((m) => m.kind)).toEqual(['ServiceAccount', 'RoleBinding', 'Secret', 'RemoteMCPServer', 'Agent']);
    for (const m of objs) expect(await dryRunCreate(m), `${m.kind} ${m.metadata.name}`).toBeUndefined();
  });

  it('the same apiserver refuses broken variants (so acceptance above means something)', async () => {
    const objs = examples().map(relocate);
    const server = objs.find((m) => m.kind === 'RemoteMCPServer') as Manifest & { spec: Record<string, unknown> };
    const agent = objs.find((m) => m.kind === 'Agent') as Manifest;
    // Unknown field (e.g. a misspelt headersFrom).
    expect(await dryRunCreate({ ...server, spec: { ...server.spec, headers: [] } })).toMatch(
      /unknown field "spec.headers"/,
    );
    // CEL: TLS settings contradict an http:// URL.
    expect(await dryRunCreate({ ...server, spec: { ...server.spec, tls: { disableVerify: true } } })).toMatch(
      /spec.tls must be unset when spec.url has http:\/\/ scheme/,
    );
    // CEL: every requireApproval entry must be one of toolNames.
    const broken = JSON.parse(
      JSON.stringify(agent).replace('"requireApproval":["plan"', '"requireApproval":["delete-everything"'),
    );
    expect(await dryRunCreate(broken)).toMatch(/each RequireApproval entry must also appear in ToolNames/);
  });

  it("the Agent's tool names are tools kpromo's MCP server lists", async () => {
    const cfg = join(tmpdir(), `kagent-mcp-${RUN}.yaml`);
    writeFileSync(
      cfg,
      `kubeconfig: ${kubeconfig}\ncontext: dev\nnamespaces: [${NS.kpromo}]\ndefaultNamespace: ${NS.kpromo}\nlogLevel: warn\nclusterAccess:\n  - { namespaces: [${NS.kpromo}], contexts: [dev] }\n`,
    );
    const c = new Client({ name: 'kagent-example-test', version: '1.0.0' });
    await c.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['--import', 'tsx', join(REPO_ROOT, 'controller/src/main.ts'), '-c', cfg, 'mcp', '--stdio'],
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', USER: 'kagent-example' },
        stderr: 'ignore',
      }),
    );
    try {
      const listed = (await c.listTools()).tools.map((t) => t.name);
      const { toolNames, requireApproval } = agentTools(examples().find((m) => m.kind === 'Agent') as Manifest);
      expect(listed).toEqual(expect.arrayContaining(toolNames));
      // What kpromo marks as changing things is what the Agent asks a human about.
      const changing = (await c.listTools()).tools
        .filter((t) => t.annotations?.readOnlyHint === false)
        .map((t) => t.name);
      expect(requireApproval.sort()).toEqual(changing.filter((n) => toolNames.includes(n)).sort());
    } finally {
      await c.close();
    }
  });
});
