import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { agentTools, examples, kagentCrds, type Manifest } from './manifests.js';

// The examples against kagent's published CRD schemas (v0.9.12, vendored in schema/): types,
// enums, required fields, formats. ajv does not run the x-kubernetes-validations (CEL) rules nor
// refuse unknown fields (the schemas do not close objects); kagent.int.test.ts has a real
// kube-apiserver check both, with the same CRDs installed.

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
for (const kw of [
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-map-type',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-list-map-keys',
])
  ajv.addKeyword(kw);

const schemaFor = new Map(
  kagentCrds().map((c) => [
    `${c.spec.group}/${c.spec.versions[0].name}/${c.spec.names.kind}`,
    ajv.compile(c.spec.versions[0].schema.openAPIV3Schema),
  ]),
);
const kagentObjects = () => examples().filter((m) => m.apiVersion.startsWith('kagent.dev/'));
const byKind = (kind: string) => examples().find((m) => m.kind === kind) as Manifest;

describe('examples/kagent', () => {
  it('has one RemoteMCPServer and one Agent, both kagent.dev/v1alpha2, valid against the vendored schemas', () => {
    expect(kagentObjects().map((m) => `${m.apiVersion} ${m.kind}`)).toEqual([
      'kagent.dev/v1alpha2 RemoteMCPServer',
      'kagent.dev/v1alpha2 Agent',
    ]);
    for (const m of kagentObjects()) {
      const validate = schemaFor.get(`${m.apiVersion}/${m.kind}`);
      expect(validate, m.kind).toBeDefined();
      expect(validate?.(m), `${m.kind}: ${ajv.errorsText(validate?.errors)}`).toBe(true);
    }
  });

  it('the schemas are enforced: a wrong protocol and a missing url are refused', () => {
    const server = byKind('RemoteMCPServer') as Manifest & { spec: Record<string, unknown> };
    const validate = schemaFor.get('kagent.dev/v1alpha2/RemoteMCPServer')!;
    expect(validate({ ...server, spec: { ...server.spec, protocol: 'WEBSOCKET' } })).toBe(false);
    const { url: _url, ...noUrl } = server.spec;
    expect(validate({ ...server, spec: noUrl })).toBe(false);
  });

  it('the RemoteMCPServer is Streamable HTTP to the controller MCP path, its token from the example Secret', () => {
    const server = byKind('RemoteMCPServer') as Manifest & {
      spec: { protocol: string; url: string; headersFrom: Array<{ name: string; valueFrom: Record<string, string> }> };
    };
    expect(server.spec.protocol).toBe('STREAMABLE_HTTP');
    expect(new URL(server.spec.url).pathname).toBe('/mcp');
    const [header] = server.spec.headersFrom;
    expect(header.name).toBe('Authorization');
    const secret = examples().find(
      (m) => m.kind === 'Secret' && m.metadata.name === header.valueFrom.name,
    ) as Manifest & { stringData: Record<string, string> };
    expect(header.valueFrom.type).toBe('Secret');
    expect(secret.metadata.namespace).toBe(server.metadata.namespace);
    expect(secret.stringData[header.valueFrom.key]).toMatch(/^Bearer /);
  });

  it('the Agent uses the RemoteMCPServer and asks before every tool that changes the cluster', () => {
    const agent = byKind('Agent');
    const { toolNames, requireApproval } = agentTools(agent);
    expect(toolNames).toEqual(['list', 'diff', 'state', 'plan', 'promote', 'rollback']);
    expect(requireApproval).toEqual(['plan', 'promote', 'rollback']);
    expect(JSON.stringify(agent)).toContain('"kind":"RemoteMCPServer","name":"kpromo"');
  });
});
