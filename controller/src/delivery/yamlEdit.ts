import { isMap, isScalar, parseDocument, type Scalar, YAMLError } from 'yaml';
import { readSetterMarker, type SetterField, type SetterMarker } from './setterMarker.js';
import { applyTextEdits, planTextEdits, sameContent, type ValueWrite } from './yamlSplice.js';

/** Longest dot path accepted (the CRD schema's maxLength says the same). */
export const MAX_VALUES_PATH_LENGTH = 256;
/** Segment grammar of a dot path, as the CRD schema's pattern has it. */
const SEGMENT = /^[A-Za-z0-9_-]+$/;
/** Segments that would reach an object's prototype instead of a key of its own (prototype pollution). */
export const FORBIDDEN_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * A values path (`valuesPath`, `digestPath`) that cannot be used; `field` names the setting to fix.
 * Permanent: the Environment must change before a retry can succeed.
 */
export class ValuesPathError extends Error {
  override name = 'ValuesPathError';
  readonly permanent = true;
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** The YAML file cannot take the value (not YAML, a list or scalar on the way). Permanent too. */
export class YamlEditError extends Error {
  override name = 'YamlEditError';
  readonly permanent = true;
}

/**
 * Segments of a dot path such as `image.tag`, checked: segments of letters, digits, `_` and
 * `-`, at most 256 characters, and none of `__proto__`, `constructor`, `prototype`. Throws
 * {@link ValuesPathError} naming `field` otherwise.
 */
export function parseValuesPath(path: unknown, field = 'valuesPath'): string[] {
  const shown = typeof path === 'string' ? ` ${JSON.stringify(path.length > 80 ? `${path.slice(0, 80)}…` : path)}` : '';
  const bad = (detail: string) => new ValuesPathError(field, `${field}${shown}: ${detail}`);
  if (typeof path !== 'string') throw bad('must be a string');
  if (!path) throw bad('is empty');
  if (path.length > MAX_VALUES_PATH_LENGTH) throw bad(`is longer than ${MAX_VALUES_PATH_LENGTH} characters`);
  const parts = path.split('.');
  for (const p of parts) {
    if (FORBIDDEN_SEGMENTS.has(p))
      throw bad(`segment "${p}" is not allowed (__proto__, constructor and prototype are reserved)`);
    if (!SEGMENT.test(p))
      throw bad(
        `must be dot-separated keys of letters, digits, "_" and "-" (e.g. image.tag); segment ${JSON.stringify(p)} is not`,
      );
  }
  return parts;
}

// Never fold long lines: an image reference must stay on one line to stay readable in diffs.
const TO_STRING = { lineWidth: 0 } as const;

export interface ImageValue {
  /** Image repository including the registry host, e.g. registry.example.com/prod/app. */
  image: string;
  tag: string;
  digest: string;
}

/** `repo:tag@digest`: the tag for humans, the digest pins what actually runs. */
export function imageRef(v: ImageValue): string {
  return `${v.image}:${v.tag}@${v.digest}`;
}

/** What a field carrying a Flux setter marker holds: the whole reference or the part the marker names. */
export function markerValue(field: SetterField, v: ImageValue): string {
  switch (field) {
    case 'tag':
      return v.tag;
    case 'name':
      return v.image;
    case 'digest':
      return v.digest;
    default:
      return imageRef(v);
  }
}

/**
 * Sets the image at a dot path in a YAML document, keeping comments and formatting. Pure: the
 * caller does the I/O.
 * - A string there (or nothing yet) gets the full image reference; a string carrying a Flux setter
 *   marker (`# {"$imagepolicy": "ns:policy[:tag|:name|:digest]"}`) gets the form the marker names.
 * - An object there whose fields carry markers gets exactly those fields set, each in its marker's
 *   form (as image-automation-controller would write them); an object without markers gets its tag
 *   and digest (and repository, when it has that key) set.
 * Only the written values change in the text: other lines, comments and markers stay byte for
 * byte (when a key must be created somewhere a line cannot simply be inserted, the document is
 * re-serialized, which still keeps every comment).
 *
 * Throws {@link ValuesPathError} for a bad path (checked first, see {@link parseValuesPath}) and
 * {@link YamlEditError} when the text is not YAML, the path cannot hold the value, or a marker there
 * is malformed.
 */
export function setImageInYaml(
  text: string,
  valuesPath: string,
  value: ImageValue,
  field = 'valuesPath',
): { text: string; changed: boolean } {
  const path = parseValuesPath(valuesPath, field);
  try {
    return setAt(text, valuesPath, path, value);
  } catch (e) {
    if (e instanceof YamlEditError) throw e;
    if (e instanceof YAMLError) throw new YamlEditError(`cannot set ${valuesPath}: ${yamlErrorPlace(e)}`);
    // The yaml library's own complaints, e.g. a scalar or alias where the path needs a map.
    throw new YamlEditError(`cannot set ${valuesPath}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * Where the yaml library found a problem, without its message: that quotes the offending line of
 * the file (its `prettyErrors` excerpt), and a repository file may hold secrets that must not reach
 * plan status, Events or logs. Line and column (1-based) and the library's error code only.
 */
export function yamlErrorPlace(e: YAMLError): string {
  const at = e.linePos?.[0];
  return `${at ? `at line ${at.line}, column ${at.col}` : `at offset ${e.pos[0]}`} (${e.code})`;
}

/** The marker in a scalar's line comment, if any; a malformed one is an error naming `where`. */
function markerOf(node: Scalar, where: string): SetterMarker | undefined {
  const read = readSetterMarker(node.comment);
  if (read && 'problem' in read) throw new YamlEditError(`${where}: ${read.problem}`);
  return read?.marker;
}

/** What to write for the node at `path` (see {@link setImageInYaml}). */
function writesFor(node: unknown, path: string[], valuesPath: string, value: ImageValue): ValueWrite[] {
  if (isMap(node)) {
    const marked: ValueWrite[] = [];
    for (const pair of node.items) {
      if (!isScalar(pair.key) || !isScalar(pair.value)) continue;
      const key = String(pair.key.value);
      const m = markerOf(pair.value, `${valuesPath}.${key}`);
      if (m) marked.push({ path: [...path, key], value: markerValue(m.field, value) });
    }
    if (marked.length) return marked;
    const keys = node.has('repository') ? ['repository', 'tag', 'digest'] : ['tag', 'digest'];
    const of: Record<string, string> = { repository: value.image, tag: value.tag, digest: value.digest };
    return keys.map((k) => ({ path: [...path, k], value: of[k] }));
  }
  if (node !== undefined && !isScalar(node)) {
    throw new YamlEditError(
      `${valuesPath} is a list or an alias, expected an image string or an object with tag/digest`,
    );
  }
  const m = isScalar(node) ? markerOf(node, valuesPath) : undefined;
  return [{ path, value: m ? markerValue(m.field, value) : imageRef(value) }];
}

function setAt(
  text: string,
  valuesPath: string,
  path: string[],
  value: ImageValue,
): { text: string; changed: boolean } {
  const doc = parseDocument(text);
  if (doc.errors.length) throw new YamlEditError(`invalid YAML ${yamlErrorPlace(doc.errors[0])}`);
  const writes = writesFor(doc.getIn(path, true), path, valuesPath, value).filter((w) => {
    const cur = doc.getIn(w.path, true);
    return !(isScalar(cur) && cur.value === w.value);
  });
  if (!writes.length) return { text, changed: false };
  // Text edits planned on the source as parsed, before the Document API changes it.
  const edits = planTextEdits(text, doc, writes);
  for (const w of writes) {
    const cur = doc.getIn(w.path, true);
    if (isScalar(cur))
      cur.value = w.value; // keeps the node's comments and quoting style
    else doc.setIn(w.path, w.value);
  }
  const spliced = edits && applyTextEdits(text, edits);
  // The minimal edit stands only when it parses to exactly what the Document API made.
  if (spliced !== undefined && sameContent(spliced, doc, writes)) return { text: spliced, changed: true };
  return { text: doc.toString(TO_STRING), changed: true };
}
/**
 * Checks a rendered delivery.git.path (placeholders replaced) names a file inside the repository
 * checkout: relative, `/`-separated, no empty, `.`, `..` or `.git` segments, no backslash or NUL.
 * Returns the path; throws {@link ValuesPathError} naming `field` otherwise. For the git delivery to
 * call before joining the path to its checkout directory.
 */
export function checkRepoFilePath(path: unknown, field = 'delivery.git.path'): string {
  const shown =
    typeof path === 'string' ? ` ${JSON.stringify(path.length > 120 ? `${path.slice(0, 120)}…` : path)}` : '';
  const bad = (detail: string) => new ValuesPathError(field, `${field}${shown}: ${detail}`);
  if (typeof path !== 'string' || !path) throw bad('must be a non-empty string');
  if (path.length > 1024) throw bad('is longer than 1024 characters');
  if (/[\\\0]/.test(path)) throw bad('must not contain a backslash or NUL character');
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) throw bad('must be relative to the repository root');
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.' || seg === '..')
      throw bad('must not have empty, "." or ".." segments: the file must stay inside the repository');
    if (seg.toLowerCase() === '.git') throw bad('must not point into the .git directory');
  }
  return path;
}
