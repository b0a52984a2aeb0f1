import { RE2JS } from 're2js';

/**
 * Matching of user-supplied patterns (flow and filter `tagPattern`, selector globs) in linear time.
 *
 * They run on the event loop: a backtracking RegExp such as `^(a+)+$` against a long tag would stall
 * the controller (and cost it the lease). Regular expressions use RE2 (re2js, pure JavaScript):
 * no backreferences or lookaround, matching time linear in the input. Globs use a matcher that
 * never backtracks. Patterns and inputs are bounded in length; compiled patterns are cached.
 */

/** Longest tagPattern accepted (the CRD schema's maxLength says the same). */
export const MAX_PATTERN_LENGTH = 256;
/** RE2 program size above which a pattern is refused (real tag patterns are far below 200). */
export const MAX_PROGRAM_SIZE = 5_000;
/** Longest input a tag pattern is tested against; longer ones never match (OCI tags have at most 128). */
export const MAX_MATCH_INPUT = 256;
/** Longest selector glob accepted (Kubernetes names have at most 253 characters). */
export const MAX_GLOB_LENGTH = 512;
/** Longest name a glob is tested against; longer ones never match. */
export const MAX_GLOB_INPUT = 1_024;
/** Compiled patterns kept (least recently used go first). */
const REGEX_CACHE_SIZE = 128;
const GLOB_CACHE_SIZE = 2_048;

/** Bad caller or resource input to the candidate computation; `field` names what to fix. */
export class InputError extends Error {
  override name = 'InputError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** A tagPattern or glob that cannot be used, e.g. `tagPattern: invalid regular expression (RE2 syntax): …`. */
export class PatternError extends InputError {
  override name = 'PatternError';
}

export interface Matcher {
  readonly source: string;
  /** Whether the pattern matches (anywhere, for a regular expression; whole, for a glob). */
  test(input: string): boolean;
}

/** A small LRU: patterns come from users and must not grow memory without bound. */
class Lru<V> {
  private readonly m = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    const v = this.m.get(k);
    if (v !== undefined) {
      this.m.delete(k);
      this.m.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    this.m.delete(k);
    this.m.set(k, v);
    if (this.m.size > this.max) this.m.delete(this.m.keys().next().value as string);
  }
}

/** Compiled pattern, or the reason it failed (without the field name: callers name their field). */
type Compiled = { ok: true; matcher: Matcher } | { ok: false; detail: string };
const regexCache = new Lru<Compiled>(REGEX_CACHE_SIZE);

function compileRe2(pattern: string): Compiled {
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    return { ok: false, detail: `invalid regular expression (RE2 syntax): ${msg}` };
  }
  const size = re.programSize();
  if (size > MAX_PROGRAM_SIZE) {
    return {
      ok: false,
      detail: `regular expression is too complex (RE2 program size ${size}, limit ${MAX_PROGRAM_SIZE}); use fewer or smaller repetition counts`,
    };
  }
  return {
    ok: true,
    matcher: {
      source: pattern,
      test: (input: string) => typeof input === 'string' && input.length <= MAX_MATCH_INPUT && re.test(input),
    },
  };
}

/**
 * A tag pattern (RE2 syntax, unanchored like RegExp.test) compiled once and cached. Throws
 * {@link PatternError} naming `field` when it is not a string, too long, not RE2 or too complex.
 */
export function compileTagPattern(pattern: unknown, field = 'tagPattern'): Matcher {
  if (typeof pattern !== 'string') throw new PatternError(field, `${field}: must be a string`);
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new PatternError(
      field,
      `${field}: regular expression is ${pattern.length} characters long, limit ${MAX_PATTERN_LENGTH}`,
    );
  }
  let c = regexCache.get(pattern);
  if (!c) {
    c = compileRe2(pattern);
    regexCache.set(pattern, c);
  }
  if (!c.ok) throw new PatternError(field, `${field}: ${c.detail}`);
  return c.matcher;
}

/** The problem with a tag pattern, or undefined when it is usable (for validating request arguments). */
export function tagPatternProblem(pattern: unknown, field = 'tagPattern'): string | undefined {
  try {
    compileTagPattern(pattern, field);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

const globCache = new Lru<Matcher>(GLOB_CACHE_SIZE);

/** `seg` (where `?` is any one character) at `at` in `s`. */
function segmentAt(s: string, at: number, seg: string): boolean {
  if (at < 0 || at + seg.length > s.length) return false;
  for (let i = 0; i < seg.length; i++) {
    const g = seg.charCodeAt(i);
    if (g !== 63 /* ? */ && g !== s.charCodeAt(at + i)) return false;
  }
  return true;
}

function globTest(parts: readonly string[], s: string): boolean {
  if (typeof s !== 'string' || s.length > MAX_GLOB_INPUT) return false;
  if (parts.length === 1) return s.length === parts[0].length && segmentAt(s, 0, parts[0]);
  const first = parts[0];
  const last = parts[parts.length - 1];
  if (s.length < first.length + last.length) return false;
  if (!segmentAt(s, 0, first) || !segmentAt(s, s.length - last.length, last)) return false;
  // Between the anchored ends, each `*`-separated segment at its leftmost place: leftmost leaves the
  // most room for the rest, so no earlier choice ever needs revisiting (no backtracking).
  let pos = first.length;
  const end = s.length - last.length;
  for (let k = 1; k < parts.length - 1; k++) {
    const seg = parts[k];
    if (!seg) continue;
    let at = pos;
    while (at + seg.length <= end && !segmentAt(s, at, seg)) at++;
    if (at + seg.length > end) return false;
    pos = at + seg.length;
  }
  return true;
}

/**
 * Glob with `*` (any run of characters) and `?` (any one character), matching the whole name.
 * Compiled once per glob (selectors are evaluated per app); time at most name × glob length.
 * Throws {@link PatternError} naming `field` for a glob that is not a string or is too long.
 */
export function globMatcher(glob: unknown, field = 'applications'): Matcher {
  if (typeof glob !== 'string') throw new PatternError(field, `${field}: a name or glob must be a string`);
  if (glob.length > MAX_GLOB_LENGTH) {
    throw new PatternError(field, `${field}: glob is ${glob.length} characters long, limit ${MAX_GLOB_LENGTH}`);
  }
  let m = globCache.get(glob);
  if (!m) {
    const parts = glob.split('*');
    m = { source: glob, test: (s: string) => globTest(parts, s) };
    globCache.set(glob, m);
  }
  return m;
}
