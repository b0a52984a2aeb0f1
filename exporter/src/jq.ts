import { type Jq, loadJq as loadJqWasm } from 'jq-wasm';

/**
 * jq for the exporter: jq 1.8 compiled to WebAssembly (jq-wasm), wrapped so that mappings behave as
 * in Port's Kubernetes exporter, which runs gojq (pkg/jq/parser.go in port-labs/port-k8s-exporter):
 *
 * - `env` and `$ENV` see only the environment variables Port's allow-list lets through (see
 *   `jqEnvironment`), never the WASM runtime's fake environment;
 * - object keys come out sorted, as gojq keeps no insertion order: inputs are serialised with
 *   sorted keys (so `.[]`, `to_entries`, `keys_unsorted`, `tostring` over input objects see gojq's
 *   order), outputs are printed with `--sort-keys`, and `keys_unsorted`, `to_entries`, `tojson` and
 *   `tostring` sort objects built inside the program too;
 * - `toarray` (a gojq builtin jq lacks) is defined.
 *
 * Every call compiles its program (jq-wasm runs jq's `main` per call), so callers build one
 * program per resource holding all its expressions and run it over a batch of objects: the
 * compile cost is paid once per batch, not per expression and object as in the Go exporter.
 */

let instance: Promise<Jq> | undefined;

export function loadJq(): Promise<Jq> {
  instance ??= loadJqWasm();
  return instance;
}

export class JqError extends Error {
  constructor(
    readonly expression: string,
    message: string,
  ) {
    super(message);
    this.name = 'JqError';
  }
}

/** Which environment variables `env`/`$ENV` expose (Port's `allowAllEnvironmentVariablesInJQ` / `allowedEnvironmentVariablesInJQ`). */
export interface JqEnvOptions {
  /** Expose every variable. Port's default: false once a config is loaded. */
  allowAll?: boolean;
  /** Regular expressions over variable names; a variable is exposed when any matches. Default `^PORT_`, `CLUSTER_NAME`. */
  allowed?: string[];
}

export const DEFAULT_ALLOWED_ENV = ['^PORT_', 'CLUSTER_NAME'];

/**
 * The object `env`/`$ENV` evaluate to, built as port-k8s-exporter builds gojq's environment
 * (pkg/jq/parser.go, runJQQuery's WithEnvironLoader):
 * - each `NAME=value` entry is split on every `=` and only the first piece after the name is kept,
 *   so a value containing `=` is cut at its first `=` (`A=x=y` gives `x`);
 * - backslashes and double quotes in names and values come out backslash-escaped (`a"b` → `a\"b`):
 *   Port escapes them before JSON-encoding the list, so the escape survives into jq;
 * - with `allowAll` every variable is kept; otherwise only names matching one of the `allowed`
 *   patterns (joined as `(p1)|(p2)`, tested anywhere in the name), and none when the list is empty.
 */
export function jqEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  { allowAll = false, allowed = DEFAULT_ALLOWED_ENV }: JqEnvOptions = {},
): Record<string, string> {
  const escapeQuotes = (s: string) => s.replaceAll('\\', '\\\\').replaceAll('"', '\\"');
  const pattern = allowed.length > 0 ? new RegExp(allowed.map((p) => `(${escapeQuotes(p)})`).join('|')) : undefined;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const pieces = escapeQuotes(`${name}=${value}`).split('=');
    const key = pieces[0];
    if (allowAll || pattern?.test(key)) out[key] = pieces[1] ?? '';
  }
  return out;
}

/** Objects with their keys sorted, recursively (gojq's order); a `{}` in sorted order, for jq's input. */
export function sortedJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) {
    let s = '[';
    for (let i = 0; i < v.length; i++) s += (i ? ',' : '') + (v[i] === undefined ? 'null' : sortedJson(v[i]));
    return `${s}]`;
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).sort();
  let s = '{';
  let first = true;
  for (const k of keys) {
    const x = o[k];
    if (x === undefined) continue;
    s += `${first ? '' : ','}${JSON.stringify(k)}:${sortedJson(x)}`;
    first = false;
  }
  return `${s}}`;
}

/** Definitions every program starts with: the environment and gojq's key order. */
export function prelude(env: Record<string, string>): string {
  return [
    `${JSON.stringify(env)} as $ENV |`,
    'def env: $ENV;',
    'def _gojq_sorted: if type == "object" then . as $o | reduce keys[] as $k ({}; .[$k] = ($o[$k] | _gojq_sorted))',
    '  elif type == "array" then map(_gojq_sorted) else . end;',
    'def keys_unsorted: keys;',
    'def to_entries: [keys[] as $k | {key: $k, value: .[$k]}];',
    'def with_entries(f): to_entries | map(f) | from_entries;',
    'def _jq_tojson: tojson;',
    'def tojson: _gojq_sorted | _jq_tojson;',
    'def _jq_tostring: tostring;',
    'def tostring: if type == "string" then . else _gojq_sorted | _jq_tostring end;',
    'def toarray: if type == "array" then . else [.] end;',
    '',
  ].join('\n');
}

function cleanMessage(stderr: string): string {
  return stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^\^+$/.test(l) && !/^jq: \d+ compile errors?$/.test(l))
    .join(' ')
    .replace(/^jq: error(?: \(at [^)]*\))?: /, '')
    .trim();
}

/** Runs `program` over `input` (serialised with gojq's key order) and returns its single output. */
export async function runJq(input: unknown, program: string): Promise<unknown> {
  const jq = await loadJq();
  return runJqSync(jq, input, program);
}

export function runJqSync(jq: Jq, input: unknown, program: string): unknown {
  const r = jq.raw(sortedJson(input), program, ['-c', '-S']);
  if (r.exitCode !== 0) throw new JqError(program, cleanMessage(r.stderr) || `jq exited with ${r.exitCode}`);
  const out = r.stdout.trim();
  if (!out) return null;
  const nl = out.indexOf('\n');
  return JSON.parse(nl < 0 ? out : out.slice(0, nl));
}

/**
 * Compile checks for many expressions in one jq call; on failure, each is checked alone so errors
 * name the expressions that fail. Returns expression → error message for those that do not compile.
 * `variables` are names (without `$`) the caller binds, declared here as null.
 */
export async function checkExpressions(exprs: string[], variables: string[] = []): Promise<Map<string, string>> {
  const jq = await loadJq();
  const head = `${prelude({})}${variables.map((v) => `null as $${v} | `).join('')}`;
  const wrap = (e: string) => `(if false then (${e}\n) else null end)`;
  const errors = new Map<string, string>();
  const unique = [...new Set(exprs)];
  if (unique.length === 0) return errors;
  const all = jq.raw('null', `${head}[${unique.map(wrap).join(', ')}]`, ['-c']);
  if (all.exitCode === 0) return errors;
  for (const e of unique) {
    const r = jq.raw('null', `${head}${wrap(e)}`, ['-c']);
    if (r.exitCode !== 0) errors.set(e, cleanMessage(r.stderr) || `jq exited with ${r.exitCode}`);
  }
  return errors;
}

/** Throws a JqError when `expr` does not compile. */
export async function checkExpression(expr: string, variables: string[] = ['cluster']): Promise<void> {
  const errors = await checkExpressions([expr], variables);
  const msg = errors.get(expr);
  if (msg) throw new JqError(expr, msg);
}
