import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './cluster/paths.js';
import { EXCLUSIVE_INTEGRATION_FILES } from './integrationGroups.js';

/** Calls that change what every other integration file sees: such a file must run alone. */
const CLUSTER_WIDE: Array<RegExp | ((source: string) => boolean)> = [
  /\brestartComponent\(/, // restarts a control-plane process
  /\bdelete\w*Crd\(/, // deletes a CRD other files serve objects of
  // Starts a control plane: on the shared one's ports unless the file finds a free block for its own
  // (then it changes nothing others see, and runs beside them).
  (source) => /\bensureClusters\(/.test(source) && !/\bfreePortBlock\(/.test(source),
  /\bhelm\(\[\s*'install'/, // installs the chart's cluster-wide objects
];

describe('integration files that run alone (test/integrationGroups.ts)', () => {
  it('lists only files that exist', () => {
    for (const f of EXCLUSIVE_INTEGRATION_FILES) expect(existsSync(join(REPO_ROOT, f)), f).toBe(true);
  });

  it('lists every integration file that restarts a component, deletes a CRD, starts a control plane on the shared ports or installs the chart', () => {
    const files = execFileSync('git', ['ls-files', '*.int.test.ts'], { cwd: REPO_ROOT, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
    const found = files.filter((f) =>
      CLUSTER_WIDE.some((rule) => {
        const source = readFileSync(join(REPO_ROOT, f), 'utf8');
        return typeof rule === 'function' ? rule(source) : rule.test(source);
      }),
    );
    // The patterns still find the files they were written for.
    expect(found).toEqual(
      expect.arrayContaining(['controller/test/apiserverRestart.int.test.ts', 'test/helm.int.test.ts']),
    );
    expect(found.filter((f) => !EXCLUSIVE_INTEGRATION_FILES.includes(f))).toEqual([]);
  });

  it('keeps every file that waits for a component out of the unit project', () => {
    // The unit project runs first, with every core kept busy, while the components still build at
    // the lowest priority: a unit file waiting for one would wait for a build the load starves.
    const units = execFileSync('git', ['ls-files', '*.test.ts', '*.test.tsx'], { cwd: REPO_ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f && !f.endsWith('.int.test.ts') && f !== 'test/sequencer.test.ts');
    expect(units.filter((f) => /\bawait needComponents\(/.test(readFileSync(join(REPO_ROOT, f), 'utf8')))).toEqual([]);
  });
});
