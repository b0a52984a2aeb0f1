// Every key of the controller configuration the docs show is a key of its schema (ConfigSchema,
// controller/src/config.ts), found by walking the schema's shape, not a list kept here:
// - YAML examples of the configuration: a yaml block with no apiVersion/kind whose top-level keys
//   include one of the configuration's. In a block that shows several configs one after another,
//   each under a top-level comment (`# exporter`, `# controller …`, `# Backstage app-config`), only
//   the sections whose comment starts with "controller" are read; a block that opens with such a
//   comment is read whole.
// - Tables of keys: a table whose header is `| key … | env |` (the configuration's reference tables),
//   the code spans that open each row (`kubeClient.qps` / `kubeClient.burst`, `auth.jwt[]`,
//   `leaderElection.*`, `leaderElection.{enabled,name}`), under the prefix a header names
//   (`key (\`mcp.\`)`).
// - Helm values: `config.*` set by `--set`, `--set-string` and `--set-json` in shell commands, or named
//   in inline code (`config.lineStopAlerts.label`), are values of the chart's values schema
//   (deploy/helm/kpromo/values.schema.json, which maps them to the controller's keys;
//   test/helmConfigKeys.int.test.ts checks that mapping).
// A deliberately wrong example is marked as in test/docsCli.test.ts (`<!-- wrong example -->`).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from 'yaml';
import { ConfigSchema } from '../controller/src/config.js';
import { REPO_ROOT } from './cluster/paths.js';
import { DOC_FILES, type Fence, readMarkdown, shellCommands, shellSources, WRONG_EXAMPLE } from './docsMarkdown.js';

/** A zod schema, read through its definition (`_zod.def`): zod is the controller's dependency, not this package's. */
type Schema = object;

/** What a zod schema admits below it: keys (a record or a passthrough object: any key), items. */
interface Shape {
  keys: Map<string, Schema[]>;
  anyKey: Schema[];
  items: Schema[];
}

interface Def {
  type: string;
  shape?: Record<string, Schema>;
  catchall?: Schema;
  element?: Schema;
  innerType?: Schema;
  in?: Schema;
  out?: Schema;
  options?: Schema[];
  valueType?: Schema;
  getter?: () => Schema;
  left?: Schema;
  right?: Schema;
}
const defOf = (s: Schema) => (s as unknown as { _zod: { def: Def } })._zod.def;

/** The keys and items `schemas` admit together (a union admits what any of its options does). */
export function shapeOf(schemas: readonly Schema[], out: Shape = { keys: new Map(), anyKey: [], items: [] }): Shape {
  for (const s of schemas) {
    const d = defOf(s);
    const inner = [d.innerType, d.in, d.out, d.left, d.right, d.getter?.(), ...(d.options ?? [])].filter(
      (x): x is Schema => !!x,
    );
    if (d.type === 'object') {
      for (const [k, v] of Object.entries(d.shape ?? {})) out.keys.set(k, [...(out.keys.get(k) ?? []), v]);
      if (d.catchall && defOf(d.catchall).type !== 'never') out.anyKey.push(d.catchall);
    } else if (d.type === 'record' && d.valueType) out.anyKey.push(d.valueType);
    else if (d.type === 'array' && d.element) out.items.push(d.element);
    else shapeOf(inner, out);
  }
  return out;
}

const isMapping = (s: Shape) => s.keys.size > 0 || s.anyKey.length > 0;
const keysOf = (s: Shape) => (s.anyKey.length ? 'any key' : [...s.keys.keys()].join(', '));
const childOf = (s: Shape, key: string) => s.keys.get(key) ?? (s.anyKey.length ? s.anyKey : undefined);
const ROOT = shapeOf([ConfigSchema]);

/** Why a key path of the configuration (`auth.jwt[]`, `mcp.*`) is not one, or undefined. */
export function keyPathProblem(path: string): string | undefined {
  let shape = ROOT;
  let at = '';
  for (const segment of path.split('.')) {
    const m = /^([^[\]]*)((?:\[\])*)$/.exec(segment);
    if (!m) return `${path}: not a key path`;
    const [, key, brackets] = m;
    if (key === '*') {
      if (!isMapping(shape)) return `${path}: ${at || '(root)'} takes a value, not keys`;
      continue;
    }
    const child = childOf(shape, key);
    if (!child)
      return isMapping(shape)
        ? `${path}: ${key} is not a key of ${at || 'the configuration'} (it has: ${keysOf(shape)})`
        : `${path}: ${at || '(root)'} takes a value, not keys`;
    shape = shapeOf(child);
    at = at ? `${at}.${key}` : key;
    for (let n = 0; n < brackets.length / 2; n++) {
      if (!shape.items.length) return `${path}: ${at} is not a list`;
      shape = shapeOf(shape.items);
      at = `${at}[]`;
    }
  }
  return undefined;
}

/** `a.{b,c}.d` as `a.b.d` and `a.c.d`. */
function expandBraces(path: string): string[] {
  const m = /\{([^{}]*)\}/.exec(path);
  if (!m) return [path];
  return m[1].split(',').flatMap((alt) => expandBraces(path.replace(m[0], alt.trim())));
}

export interface DocKey {
  file: string;
  line: number;
  problem: string;
}

/** Every key of a YAML mapping of the configuration that the schema does not have. */
function yamlProblems(file: string, firstLine: number, text: string): DocKey[] {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  if (doc.errors.length)
    return [{ file, line: firstLine, problem: `not valid YAML: ${doc.errors[0].message.split('\n')[0]}` }];
  const out: DocKey[] = [];
  const walk = (node: unknown, shape: Shape, at: string) => {
    if (isMap(node)) {
      if (!isMapping(shape)) {
        const line = firstLine + lineCounter.linePos((node as Node).range?.[0] ?? 0).line - 1;
        out.push({ file, line, problem: `${at}: takes a value, not keys` });
        return;
      }
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        const path = at ? `${at}.${key}` : key;
        const child = childOf(shape, key);
        if (!child) {
          const line = firstLine + lineCounter.linePos((pair.key as Node).range?.[0] ?? 0).line - 1;
          out.push({
            file,
            line,
            problem: `${path}: not a key of the controller configuration (${at || 'its top level'} has: ${keysOf(shape)})`,
          });
          continue;
        }
        walk(pair.value, shapeOf(child), path);
      }
    } else if (isSeq(node)) {
      if (!shape.items.length) return; // a list where a value goes: the schema's to refuse, not a key
      for (const item of node.items) walk(item, shapeOf(shape.items), `${at}[]`);
    }
  };
  walk(doc.contents, ROOT, '');
  return out;
}

/** The parts of a yaml block that are controller configuration, with their first line. */
export function configSections(fence: Fence): Array<{ line: number; text: string }> {
  if (fence.wrong || !['yaml', 'yml'].includes(fence.lang)) return [];
  const sections: Array<{ label: string; line: number; lines: string[] }> = [];
  fence.lines.forEach((l, i) => {
    if (/^#/.test(l) || !sections.length)
      sections.push({ label: /^#/.test(l) ? l : '', line: fence.line + i, lines: [] });
    sections.at(-1)?.lines.push(l);
  });
  const controller = sections.filter((s) => /^#\s*controller\b/i.test(s.label));
  // Labelled sections, or the whole block when its top level names a key of the configuration.
  const chosen = controller.length ? controller : [{ label: '', line: fence.line, lines: fence.lines }];
  return chosen.flatMap((s) => {
    const text = s.lines.join('\n');
    let top: unknown;
    try {
      top = parseDocument(text).toJSON();
    } catch {
      top = undefined;
    }
    if (!top || typeof top !== 'object' || Array.isArray(top)) return controller.length ? [{ line: s.line, text }] : [];
    const keys = Object.keys(top);
    if (keys.includes('apiVersion') || keys.includes('kind')) return [];
    return controller.length || keys.some((k) => ROOT.keys.has(k)) ? [{ line: s.line, text }] : [];
  });
}

/** The key paths in the first cell of each row of a `| key … | env |` table, with the header's prefix. */
function tableKeys(text: string): Array<{ line: number; path: string }> {
  const lines = text.split('\n');
  const out: Array<{ line: number; path: string }> = [];
  let prefix: string | undefined;
  lines.forEach((l, i) => {
    const cells = l.split(/(?<!\\)\|/).slice(1, -1);
    if (!/^\s*\|/.test(l) || cells.length < 2) {
      prefix = undefined;
      return;
    }
    const header = /^\s*key\b(?:\s*\(`([^`]+)`\))?\s*$/.exec(cells[0]);
    if (header && cells[1].trim() === 'env') {
      prefix = header[1] ?? '';
      return;
    }
    if (prefix === undefined || /^\s*-+\s*$/.test(cells[0]) || l.includes(WRONG_EXAMPLE)) return;
    // The row opens with its keys: `a` / `b.c` …; prose after them is not read.
    const lead = /^\s*(`[^`]+`(?:\s*\/\s*`[^`]+`)*)/.exec(cells[0])?.[1] ?? '';
    for (const m of lead.matchAll(/`([^`]+)`/g))
      for (const path of expandBraces(m[1])) out.push({ line: i + 1, path: `${prefix}${path}` });
  });
  return out;
}

const chartSchema = JSON.parse(readFileSync(join(REPO_ROOT, 'deploy/helm/kpromo/values.schema.json'), 'utf8'));
interface JsonSchema {
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  type?: string | string[];
}

/** Why `config.…` (helm --set syntax: `a.b`, `a[0].b`, `a\.b`) is not a value of the chart, or undefined. */
export function chartValueProblem(path: string): string | undefined {
  let s: JsonSchema = chartSchema;
  let at = '';
  for (const part of path.split(/(?<!\\)\./)) {
    const m = /^(.*?)((?:\[\d+\])*)$/.exec(part.replace(/\\\./g, '.'));
    const key = m?.[1] ?? part;
    const child =
      s.properties?.[key] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
    if (!child) {
      if (s.additionalProperties === true || (!s.properties && s.additionalProperties !== false)) return undefined;
      return `--set ${path}: ${key} is not a value of the chart's ${at || 'values'} (it has: ${Object.keys(s.properties ?? {}).join(', ')})`;
    }
    s = child;
    at = at ? `${at}.${key}` : key;
    for (let n = 0; n < (m?.[2].match(/\[/g)?.length ?? 0); n++) {
      if (!s.items) return `--set ${path}: ${at} is not a list`;
      s = s.items;
    }
  }
  return undefined;
}

/** The `config.*` keys helm commands of a doc set, with their lines. */
function helmSets(file: string): Array<{ line: number; path: string }> {
  const out: Array<{ line: number; path: string }> = [];
  for (const { line, text, prose } of shellSources(readMarkdown(file)))
    for (const words of shellCommands(text, { prose }))
      words.forEach((w, i) => {
        const flag = words[i - 1] ?? '';
        if (!['--set', '--set-string', '--set-json', '--set-file'].includes(flag)) return;
        // --set takes a,b=c lists (commas inside {…} are a list value); --set-json one key=JSON.
        for (const assignment of flag === '--set-json' ? [w] : w.split(/(?<!\\),(?![^{]*\})/)) {
          const path = assignment.split('=')[0];
          if (path.startsWith('config.')) out.push({ line, path });
        }
      });
  return out;
}

/**
 * The chart values prose names in code (`config.lineStopAlerts.label`, `config.namespaces={shop}`),
 * up to a placeholder or wildcard (`config.mcp.<key>`, `config.*`); not the file `config.yaml`.
 */
function proseValues(file: string): Array<{ line: number; path: string }> {
  return readMarkdown(file).spans.flatMap((s) => {
    const m = /^(config(?:\.[A-Za-z][\w-]*(?:\[\d*\])*)+)(?:\.(?:<[^>]*>|\*|\{[^}]*\}).*|\.?=.*)?$/.exec(s.text);
    return !m || s.wrong || /^config\.(ya?ml|json|ts|d\.ts)$/.test(m[1]) ? [] : [{ line: s.line, path: m[1] }];
  });
}

/** Every wrong key one doc shows, as `file:line: what is wrong`. */
function docProblems(file: string): string[] {
  const text = readFileSync(join(REPO_ROOT, file), 'utf8');
  const md = readMarkdown(file, text);
  const found: DocKey[] = [
    ...md.fences.flatMap((f) => configSections(f).flatMap((s) => yamlProblems(file, s.line, s.text))),
    ...tableKeys(text).flatMap(({ line, path }) => {
      const problem = keyPathProblem(path);
      return problem ? [{ file, line, problem }] : [];
    }),
    ...[...helmSets(file), ...proseValues(file)].flatMap(({ line, path }) => {
      const problem = chartValueProblem(path);
      return problem ? [{ file, line, problem }] : [];
    }),
  ];
  return found.sort((a, b) => a.line - b.line).map((k) => `${k.file}:${k.line}: ${k.problem}`);
}

describe('the checker', () => {
  it('walks the schema: nested objects, lists, wildcards, and names what exists instead', () => {
    for (const ok of [
      'kubeconfig',
      'auth.jwt[].issuer.url',
      'leaderElection.*',
      'mcp.oauth.resourceName',
      'clusterAccess[].targetNamespaces',
    ])
      expect(keyPathProblem(ok), ok).toBeUndefined();
    expect(keyPathProblem('auth.jwt[].issuer.uri')).toMatch(
      /^auth.jwt\[\].issuer.uri: uri is not a key of auth.jwt\[\].issuer \(it has: url, /,
    );
    expect(keyPathProblem('workers.max')).toBe('workers.max: workers takes a value, not keys');
    expect(keyPathProblem('mcp.resourceName')).toMatch(
      /^mcp.resourceName: resourceName is not a key of mcp \(it has: enabled, /,
    );
    expect(expandBraces('leaderElection.{enabled,name}')).toEqual(['leaderElection.enabled', 'leaderElection.name']);
  });
  it('reads the controller sections of a yaml block, with the line of each wrong key', () => {
    const fence = (lines: string[], wrong = false): Fence => ({ file: 'x.md', line: 10, lang: 'yaml', lines, wrong });
    const mixed = fence([
      '# exporter',
      'stateKey: x',
      '# controller',
      'resourceKinds: [a.b]',
      'egress:',
      '  allowedCIDRs: []',
    ]);
    expect(configSections(mixed)).toEqual([
      { line: 12, text: '# controller\nresourceKinds: [a.b]\negress:\n  allowedCIDRs: []' },
    ]);
    expect(configSections(mixed).flatMap((s) => yamlProblems('x.md', s.line, s.text))).toEqual([
      {
        file: 'x.md',
        line: 15,
        problem: 'egress.allowedCIDRs: not a key of the controller configuration (egress has: allowedCidrs)',
      },
    ]);
    expect(configSections(fence(['kind: Role', 'rules: []']))).toEqual([]);
    expect(configSections(fence(['auth:', '  jwt: []'], true))).toEqual([]);
    expect(configSections(fence(['auth:', '  jwt: []']))).toHaveLength(1);
  });
  it("checks helm's config.* values against the chart's values schema", () => {
    expect(chartValueProblem('config.kubeconfig.existingSecret')).toBeUndefined();
    expect(chartValueProblem('config.egress.allowedCidrs')).toBeUndefined();
    expect(chartValueProblem('config.clusterAccess[0].contexts')).toBeUndefined();
    expect(chartValueProblem('config.namespace')).toMatch(
      /^--set config.namespace: namespace is not a value of the chart's config \(it has: namespaces, /,
    );
  });
});

describe('every controller configuration key in the docs is a key of its schema', () => {
  it('finds the configuration the docs show', () => {
    const auth = readMarkdown('docs/auth.md').fences.flatMap(configSections);
    expect(auth.length).toBeGreaterThanOrEqual(3);
    expect(tableKeys(readFileSync(join(REPO_ROOT, 'docs/configuration.md'), 'utf8')).length).toBeGreaterThan(25);
    expect(helmSets('docs/getting-started.md').map((s) => s.path)).toContain('config.clusterAccess');
    expect(proseValues('docs/line-stop.md').map((s) => s.path)).toContain('config.lineStopAlerts.liftOnResolve');
  });
  it.each(DOC_FILES)('%s', (file) => {
    expect(docProblems(file)).toEqual([]);
  });
});
