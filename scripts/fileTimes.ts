// `yarn test:times`: copies the integration files' times of the latest passing run (written by
// scripts/countReporter.ts) into test/fileTimes.json, whose order test/sequencer.ts starts them in.
// Run it after a full `yarn test` on an otherwise idle machine; a partial run updates its files only.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../test/cluster/paths.js';
import { FILE_TIMES_LOG } from './countReporter.js';

const target = join(REPO_ROOT, 'test/fileTimes.json');
if (!existsSync(FILE_TIMES_LOG())) {
  console.error(`no times recorded yet: ${FILE_TIMES_LOG()} is written by a passing integration run (yarn test)`);
  process.exit(1);
}
const measured: Record<string, number> = JSON.parse(readFileSync(FILE_TIMES_LOG(), 'utf8'));
const current = JSON.parse(readFileSync(target, 'utf8')) as { note: string; seconds: Record<string, number> };
// Files that no longer exist drop out; the rest sorted by name, so a diff shows what moved.
const merged = { ...current.seconds, ...measured };
const seconds = Object.fromEntries(
  Object.keys(merged)
    .filter((f) => existsSync(join(REPO_ROOT, f)))
    .sort()
    .map((f) => [f, merged[f]]),
);
writeFileSync(target, `${JSON.stringify({ note: current.note, seconds }, null, 2)}\n`);
console.log(
  `test/fileTimes.json: ${Object.keys(measured).length} files measured, ${Object.keys(seconds).length} listed`,
);
