import type { TaskResult } from './run.js';
import { summarise } from './score.js';

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** The figures of a set of results, one line each. */
export function figures(label: string, results: TaskResult[]): string[] {
  const s = summarise(results.map((r) => r.score));
  const seconds = results.reduce((n, r) => n + r.seconds, 0);
  return [
    `${label}: ${s.tasks} tasks, ${s.passed} passed (${pct(s.tasks ? s.passed / s.tasks : 0)})`,
    `${label}: tool choice ${pct(s.toolChoice)}, argument accuracy ${pct(s.argumentAccuracy)} (${s.steps} expected calls)`,
    `${label}: refusals held ${s.refusals.held}/${s.refusals.of}`,
    `${label}: ${seconds.toFixed(1)} s, ${(seconds / Math.max(1, s.tasks)).toFixed(1)} s per task`,
  ];
}

export function line(r: TaskResult): string {
  const calls = r.calls.map((c) => `${c.name}${c.write ? '*' : ''} ${JSON.stringify(c.arguments)}`).join(' ; ');
  const why = r.score.why.length ? `  ✗ ${r.score.why.join('; ')}` : '';
  const err = r.error ? `  (error: ${r.error})` : '';
  return `${r.score.passed ? 'hit ' : 'miss'} ${r.task.id.padEnd(26)} ${r.seconds.toFixed(1).padStart(5)} s  ${calls || '(no call)'}${why}${err}`;
}
