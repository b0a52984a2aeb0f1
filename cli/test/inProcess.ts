import { describeFailure, EXIT } from '../src/exitCodes.js';
import { buildProgram } from '../src/program.js';

/** What one in-process `kpromo` run printed, and the exit code main.ts would have used. */
export interface InProcessRun {
  code: number;
  out: string;
  err: string;
}

/**
 * Runs `kpromo <args>` in this process (buildProgram, as main.ts runs it): stdout and stderr
 * captured, an error turned into its exit code and one-line message by describeFailure.
 */
export async function runKpromo(args: string[]): Promise<InProcessRun> {
  let out = '';
  let err = '';
  const io = {
    write: (s: string) => {
      out += s;
    },
    warn: (s: string) => {
      err += s;
    },
    tty: false,
    columns: 200,
  };
  try {
    await buildProgram('kpromo', io).parseAsync(['node', 'kpromo', ...args]);
    return { code: EXIT.OK, out, err };
  } catch (e) {
    const f = describeFailure(e);
    return { code: f.code, out, err: err + f.message };
  }
}
