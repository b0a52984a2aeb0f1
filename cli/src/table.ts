/**
 * Plain-text tables as kubectl prints them: upper-case headers, columns padded to the widest cell
 * and three spaces apart, the last column not padded.
 */

// CR fields are attacker-written: an ANSI escape or a bidi override in a label, a message or a name
// would otherwise move the cursor, recolour or reorder what the terminal shows.
const CONTROL = /[\p{Cc}\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

/** The text with control and bidi characters shown harmlessly (whitespace as a space, others as "?"). */
export function printable(v: unknown, opts: { keepNewlines?: boolean } = {}): string {
  const s = v === undefined || v === null ? '' : String(v);
  return s.replace(CONTROL, (c) => (c === '\n' && opts.keepNewlines ? c : /\s/.test(c) ? ' ' : '?'));
}

/** A table cell: printable, "-" when empty. */
export function cell(v: unknown): string {
  const s = printable(v).trim();
  return s === '' ? '-' : s;
}

const width = (s: string) => [...s].length;

export function formatTable(headers: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = [headers.map((h) => h.toUpperCase()), ...rows.map((r) => headers.map((_, i) => cell(r[i])))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => width(r[i]))));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(widths[i] - width(c))))
        .join('   ')
        .trimEnd(),
    )
    .join('\n');
}

/** Cuts a line to `columns` characters (a redrawn display must not wrap), marking the cut with "…". */
export function fit(line: string, columns: number | undefined): string {
  if (!columns || width(line) <= columns) return line;
  return `${[...line].slice(0, Math.max(0, columns - 1)).join('')}…`;
}
