import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './cluster/paths.js';
import { EXCLUSIVE_INTEGRATION_FILES } from './integrationGroups.js';

/** Calls that change what every other integration file sees: such a file must run alone. */
const CLUSTER_WIDE = [
  /\brestartComponent\(/, // restarts a control-plane process
  /\bdelete\w*Crd\(/, // deletes a CRD other files serve objects of
  /\bensureClusters\(/, // starts a control plane of its own
  /\bhelm\(\[\s*'install'/, // installs the chart's cluster-wide objects
];

describe('integration files that run alone (test/integrationGroups.ts)', () => {
  it('lists only files that exist', () => {
    for (const f of EXCLUSIVE_INTEGRATION_FILES) expect(existsSync(join(REPO_ROOT, f)), f).toBe(true);
  });

  it('lists every integration file that restarts a component, deletes a CRD, starts a control plane or installs the chart', () => {
    const files = execFileSync('git', ['ls-files', '*.int.test.ts'], { cwd: REPO_ROOT, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
    const found = files.filter((f) => CLUSTER_WIDE.some((re) => re.test(readFileSync(join(REPO_ROOT, f), 'utf8'))));
    // The patterns still find the files they were written for.
    expect(found).toEqual(expect.arrayContaining(['controller/test/faults.int.test.ts', 'test/helm.int.test.ts']));
    expect(found.filter((f) => !EXCLUSIVE_INTEGRATION_FILES.includes(f))).toEqual([]);
  });
});
