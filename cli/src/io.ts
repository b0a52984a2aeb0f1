import { printable } from './table.js';
import type { Terminal } from './watch.js';

/** Where commands write: stdout (and stderr for warnings) of the process unless a test gives another. */
export interface Io extends Terminal {
  warn(s: string): void;
}

export const processIo: Io = {
  write: (s) => void process.stdout.write(s),
  warn: (s) => void process.stderr.write(printable(s, { keepNewlines: true })),
  get tty() {
    return !!process.stdout.isTTY;
  },
  get columns() {
    return process.stdout.columns;
  },
};
