import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

// The example manifests and the vendored kagent CRDs, for examples/kagent's tests.

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [k: string]: unknown;
}

const load = (file: string): Manifest[] =>
  parseAllDocuments(readFileSync(join(import.meta.dirname, file), 'utf8'))
    .map((d) => d.toJS() as Manifest | null)
    .filter((d): d is Manifest => d !== null);

export const EXAMPLE_FILES = ['rbac.yaml', 'remote-mcp-server.yaml', 'agent.yaml'] as const;
export const examples = (): Manifest[] => EXAMPLE_FILES.flatMap(load);

export interface Crd extends Manifest {
  spec: {
    group: string;
    names: { kind: string; plural: string };
    versions: Array<{ name: string; schema: { openAPIV3Schema: Record<string, unknown> } }>;
  };
}
export const KAGENT_CRD_FILES = [
  'schema/kagent.dev_agents.v1alpha2.yaml',
  'schema/kagent.dev_remotemcpservers.v1alpha2.yaml',
];
export const kagentCrds = (): Crd[] => KAGENT_CRD_FILES.flatMap(load) as Crd[];

/** The Agent's kpromo tool names and the ones it asks a human about. */
export function agentTools(agent: Manifest): { toolNames: string[]; requireApproval: string[] } {
  const tools = (
    agent as unknown as { spec: { declarative: { tools: Array<{ mcpServer?: Record<string, string[]> }> } } }
  ).spec.declarative.tools;
  const m = tools.find((t) => t.mcpServer)?.mcpServer ?? {};
  return { toolNames: m.toolNames ?? [], requireApproval: m.requireApproval ?? [] };
}
