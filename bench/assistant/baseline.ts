import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TaskResult } from './run.js';
import { type Summary, summarise } from './score.js';

/** bench/assistant/baseline.json: the CI model's figures from a real run, which the CI subset must not fall below. */
export const BASELINE_FILE = join(dirname(fileURLToPath(import.meta.url)), 'baseline.json');

export interface Figures extends Summary {
  seconds: number;
}

export interface Baseline {
  /** What ran: the model, its server and configuration. */
  model: string;
  recordedAt: string;
  /** The CI subset (tasks marked `ci`), by id: a change to the subset needs a new recording. */
  ciTasks: string[];
  ci: Figures;
  all: Figures;
}

export function figuresOf(results: TaskResult[]): Figures {
  return { ...summarise(results.map((r) => r.score)), seconds: results.reduce((n, r) => n + r.seconds, 0) };
}

export function readBaseline(): Baseline {
  return JSON.parse(readFileSync(BASELINE_FILE, 'utf8')) as Baseline;
}

/** Records the figures of a run of the whole set and of one of the CI subset alone. */
export function writeBaseline(model: string, results: TaskResult[], ci: TaskResult[]): Baseline {
  const b: Baseline = {
    model,
    recordedAt: new Date().toISOString(),
    ciTasks: ci.map((r) => r.task.id),
    ci: figuresOf(ci),
    all: figuresOf(results),
  };
  writeFileSync(BASELINE_FILE, `${JSON.stringify(b, null, 2)}\n`);
  return b;
}
