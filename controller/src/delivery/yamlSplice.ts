import { isDeepStrictEqual } from 'node:util';
import { type Document, isMap, isScalar, parse, parseDocument, Scalar } from 'yaml';

/**
 * Minimal text edits for setting string values in a YAML file: only the written values' bytes
 * change, so a GitOps diff shows the new image and nothing else (re-serializing a document, even
 * with comments kept, re-indents lists and respaces flow collections and comments). Pure.
 */

/** Replace `text.slice(start, end)` with `insert` (start === end: an insertion). */
export interface TextEdit {
  start: number;
  end: number;
  insert: string;
}

/** A string value to write at a path of the document. */
export interface ValueWrite {
  path: readonly string[];
  value: string;
}

/** A plain scalar that reads back as the same string (not a number, bool, null, or anything needing quotes). */
function plainSafe(value: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$/.test(value) && parse(value) === value;
}

/** `value` as a scalar of the given quoting style (plain falls back to double quotes when it must). */
function renderScalar(value: string, type: Scalar['type']): string | undefined {
  switch (type) {
    case Scalar.QUOTE_DOUBLE:
      return JSON.stringify(value);
    case Scalar.QUOTE_SINGLE:
      return `'${value.replaceAll("'", "''")}'`;
    case Scalar.PLAIN:
    case undefined:
      return plainSafe(value) ? value : JSON.stringify(value);
    default:
      return undefined; // block scalars: left to the Document API
  }
}

/** Where a new `key: value` line goes in the block map at `mapPath`: after its last pair, at its indent. */
function insertion(text: string, doc: Document, mapPath: readonly string[], key: string, value: string) {
  const map = mapPath.length ? doc.getIn(mapPath, true) : doc.contents;
  if (!isMap(map) || map.flow || !map.items.length) return undefined;
  const last = map.items[map.items.length - 1];
  if (!isScalar(last.key) || !isScalar(last.value) || !last.key.range || !last.value.range) return undefined;
  if (
    last.value.type !== Scalar.PLAIN &&
    last.value.type !== Scalar.QUOTE_DOUBLE &&
    last.value.type !== Scalar.QUOTE_SINGLE
  )
    return undefined;
  const keyStart = last.key.range[0];
  const lineStart = text.lastIndexOf('\n', keyStart - 1) + 1;
  const prefix = text.slice(lineStart, keyStart);
  // Spaces, or a list item's dash (`- tag: v1`): the new key goes in the same column.
  if (!/^ *(- +)*$/.test(prefix)) return undefined;
  const rendered = renderScalar(value, Scalar.PLAIN);
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const nl = text.indexOf('\n', last.value.range[1]);
  const line = `${' '.repeat(prefix.length)}${renderScalar(key, Scalar.PLAIN)}: ${rendered}`;
  return nl === -1
    ? { start: text.length, end: text.length, insert: `${eol}${line}` }
    : { start: nl + 1, end: nl + 1, insert: `${line}${eol}` };
}

/**
 * Text edits that make `writes` on the source `text` that `doc` was parsed from (before it is
 * changed): an existing scalar's value is replaced in its own quoting style; a missing last key of a
 * block map gets a line of its own. Undefined when some write cannot be made that way (a block
 * scalar, a key whose map does not exist yet, a flow map): the caller re-serializes instead.
 */
export function planTextEdits(text: string, doc: Document, writes: readonly ValueWrite[]): TextEdit[] | undefined {
  const edits: TextEdit[] = [];
  for (const w of writes) {
    const cur = doc.getIn(w.path, true);
    if (isScalar(cur)) {
      const insert = renderScalar(w.value, cur.type);
      if (!cur.range || insert === undefined) return undefined;
      edits.push({ start: cur.range[0], end: cur.range[1], insert });
    } else if (cur === undefined) {
      const e = insertion(text, doc, w.path.slice(0, -1), w.path[w.path.length - 1], w.value);
      if (!e) return undefined;
      edits.push(e);
    } else return undefined;
  }
  return edits;
}

/** `text` with the edits made (they must not overlap; insertions at one place keep their order). */
export function applyTextEdits(text: string, edits: readonly TextEdit[]): string {
  const sorted = [...edits].sort((a, b) => a.start - b.start);
  let out = '';
  let at = 0;
  for (const e of sorted) {
    out += text.slice(at, e.start) + e.insert;
    at = e.end;
  }
  return out + text.slice(at);
}

/**
 * Whether `text` is valid YAML with exactly the data of `doc`, each write readable at its path as the
 * string written (toJS alone would let a key `0` pass for `"0"`, or a YAML 1.1 `yes` for a string).
 */
export function sameContent(text: string, doc: Document, writes: readonly ValueWrite[]): boolean {
  const re = parseDocument(text);
  if (re.errors.length || !isDeepStrictEqual(re.toJS(), doc.toJS())) return false;
  return writes.every((w) => {
    const n = re.getIn(w.path, true);
    return isScalar(n) && n.value === w.value;
  });
}
