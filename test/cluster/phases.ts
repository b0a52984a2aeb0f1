// Where a run's time went, phase by phase: ./kpromo writes its phases (install, clusters), the
// background build one line per component, `yarn test` its checks and the tests, each as
// `name<TAB>state<TAB>seconds` into the file named by KPROMO_PHASES; `yarn test` prints the table
// at the end of every run, green or red.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

export interface Phase {
  name: string;
  /** cached, built, failed, ok; empty when it says nothing. */
  state: string;
  seconds: number;
}

export function recordPhase(file: string | undefined, p: Phase): void {
  if (file) appendFileSync(file, `${p.name}\t${p.state}\t${p.seconds.toFixed(1)}\n`);
}

export function readPhases(file: string | undefined): Phase[] {
  if (!file || !existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [name = '', state = '', seconds = '0'] = l.split('\t');
      return { name, state, seconds: Number(seconds) };
    });
}

const minutes = (s: number) => (s >= 60 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`);

/**
 * The table: one row per phase; components ran in the background beside the checks and tests, so
 * they are summed apart and the total is the wall time of the phases that ran one after another.
 */
export function formatPhases(phases: Phase[], startedAtMs?: number): string {
  const width = Math.max(20, ...phases.map((p) => p.name.length));
  const row = (name: string, state: string, seconds: string) =>
    `  ${name.padEnd(width)}  ${state.padEnd(7)}  ${seconds.padStart(9)}`;
  const lines = ['where the time went, phase by phase:', row('phase', 'state', 'time')];
  for (const p of phases) lines.push(row(p.name, p.state, minutes(p.seconds)));
  const background = phases.filter((p) => p.name.startsWith('component '));
  const built = background.filter((p) => p.state === 'built');
  const sequential = phases.filter((p) => !p.name.startsWith('component '));
  if (background.length)
    lines.push(
      `  components: ${built.length} built (${minutes(built.reduce((a, p) => a + p.seconds, 0))} of build time, in the background beside the checks and tests), ${background.filter((p) => p.state === 'cached').length} cached${background.some((p) => p.state === 'failed') ? ', some FAILED' : ''}`,
    );
  lines.push(`  total, one phase after another: ${minutes(sequential.reduce((a, p) => a + p.seconds, 0))}`);
  if (startedAtMs) lines.push(`  wall time since ./kpromo started: ${minutes((Date.now() - startedAtMs) / 1000)}`);
  return lines.join('\n');
}
