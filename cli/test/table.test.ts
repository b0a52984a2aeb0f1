import { describe, expect, it } from 'vitest';
import { cell, fit, formatTable, printable } from '../src/table.js';

describe('formatTable', () => {
  it('upper-cases headers, pads every column but the last to its widest cell, three spaces apart', () => {
    expect(
      formatTable(
        ['name', 'phase', 'message'],
        [
          ['checkout', 'Succeeded', 'ready'],
          ['db', 'Failed', ''],
        ],
      ),
    ).toBe(['NAME       PHASE       MESSAGE', 'checkout   Succeeded   ready', 'db         Failed      -'].join('\n'));
  });

  it('shows a missing or empty cell as "-"', () => {
    expect(formatTable(['a', 'b'], [[undefined, null]])).toBe('A   B\n-   -');
  });

  it('neutralises terminal escapes and bidi overrides from CR fields', () => {
    const evil = 'ok\x1b[2J\x1b]0;owned\x07\u202Egnp.exe';
    const out = formatTable(['message'], [[evil]]);
    for (const c of ['\x1b', '\x07', '\u202E']) expect(out).not.toContain(c);
    expect(out).toContain('ok?[2J?]0;owned??gnp.exe');
  });
});

describe('printable', () => {
  it('turns tabs and newlines into spaces, unless newlines are kept', () => {
    expect(printable('a\tb\nc')).toBe('a b c');
    expect(printable('a\nb\x1b', { keepNewlines: true })).toBe('a\nb?');
  });
  it('cell trims and uses "-" for blank text', () => {
    expect(cell('  ')).toBe('-');
    expect(cell(' x ')).toBe('x');
  });
});

describe('fit', () => {
  it('cuts lines longer than the terminal and marks the cut', () => {
    expect(fit('abcdef', 4)).toBe('abc…');
    expect(fit('abc', 4)).toBe('abc');
    expect(fit('abcdef', undefined)).toBe('abcdef');
  });
});
