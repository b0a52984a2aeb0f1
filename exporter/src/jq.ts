import { createRequire } from 'node:module';

/**
 * jq via jq-web (jq compiled to WASM). jq-wasm was tried first but its shared instance corrupts
 * itself after a few hundred calls on Node 22 ("memory access out of bounds"), so it is not used.
 * Calls are synchronous and cost ~1 ms each, so callers batch many objects into one program.
 */
interface Jq {
  json(input: unknown, filter: string): unknown;
}

const require = createRequire(import.meta.url);
let instance: Promise<Jq> | undefined;

export function loadJq(): Promise<Jq> {
  instance ??= require('jq-web') as Promise<Jq>;
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

function cleanMessage(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m
    .split('\n')
    .filter((l) => l.trim() && !/^Non-zero exit code/.test(l))
    .join(' ')
    .trim();
}

/** Throws a JqError when `expr` does not compile (variables the mapper provides are declared). */
export async function checkExpression(expr: string): Promise<void> {
  const jq = await loadJq();
  try {
    jq.json(null, `"" as $cluster | if false then (${expr}\n) else null end`);
  } catch (e) {
    throw new JqError(expr, cleanMessage(e));
  }
}

export async function runJq(input: unknown, program: string): Promise<unknown> {
  const jq = await loadJq();
  try {
    return jq.json(input, program);
  } catch (e) {
    throw new JqError(program, cleanMessage(e));
  }
}
