#!/usr/bin/env node
import { programName } from './args.js';
import { describeFailure } from './exitCodes.js';
import { buildProgram } from './program.js';
import { printable } from './table.js';

// `kpromo` and `kubectl kpromo`: errors are one line on stderr and a documented exit code, never a
// stack trace (exitCodes.ts).
let code = 0;
try {
  await buildProgram(programName(process.argv[1])).parseAsync(process.argv);
} catch (e) {
  const f = describeFailure(e);
  if (f.message) process.stderr.write(`error: ${printable(f.message, { keepNewlines: true })}\n`);
  code = f.code;
}
// Exit once stdout has drained (the session's sockets would keep the process alive otherwise).
process.stdout.write('', () => process.exit(code));
