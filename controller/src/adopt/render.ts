import { stringify } from 'yaml';
import { type Proposal, proposedResources } from './propose.js';

/** The report of a proposal, one line per finding, then what was left out and why. */
export function adoptReportLines(p: Proposal): string[] {
  const lines = p.findings.map((f) => `${f.level === 'undecided' ? 'undecided' : 'note'}  ${f.subject}: ${f.message}`);
  if (p.incomplete.length) lines.push(`to complete by hand before applying: ${p.incomplete.join(', ')}`);
  if (p.unchanged.length) lines.push(`already as proposed: ${p.unchanged.join(', ')}`);
  if (p.updates.length) lines.push(`would change: ${p.updates.join(', ')}`);
  const n = proposedResources(p).length;
  lines.push(n ? `${n} resource(s) proposed` : 'nothing to propose: everything found is already adopted');
  return lines;
}

/** What a resource to complete by hand still needs, from the proposal's undecided findings about it. */
export function toComplete(p: Proposal, r: { kind: string; metadata: { name: string } }): string | undefined {
  if (!p.incomplete.includes(`${r.kind}/${r.metadata.name}`)) return undefined;
  return p.findings
    .filter((f) => f.level === 'undecided' && f.subject === `${r.kind} ${r.metadata.name}`)
    .map((f) => f.message)
    .join('; ');
}

/** One resource as a YAML document; one to complete by hand says so in a comment above it. */
export function resourceYaml(p: Proposal, r: { kind: string; metadata: { name: string } }): string {
  const todo = toComplete(p, r);
  return `${todo !== undefined ? `# TO COMPLETE: ${todo}\n` : ''}${stringify(r)}`;
}

/** The proposal as YAML documents, in apply order (what `kpromo adopt` prints and the portal shows). */
export function adoptYaml(p: Proposal): string {
  return proposedResources(p)
    .map((r) => `---\n${resourceYaml(p, r)}`)
    .join('');
}

/** The file name of one resource in a directory of proposals (`kpromo adopt --out`, the scaffolder). */
export const resourceFileName = (r: { kind: string; metadata: { name: string } }) =>
  `${r.kind.toLowerCase()}-${r.metadata.name}.yaml`;
