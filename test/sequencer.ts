import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { TEST_COMPONENTS, type TestComponent } from './cluster/need.js';

/** The latest position in the build order among the components a file declares (-1: none). */
export function needRank(source: string): number {
  let rank = -1;
  for (const call of source.matchAll(/needComponents\(([^)]*)\)/g))
    for (const [, id] of call[1].matchAll(/['"]([a-z-]+)['"]/g))
      rank = Math.max(rank, TEST_COMPONENTS.indexOf(id as TestComponent));
  return rank;
}

/**
 * Vitest's order (failed first, then slowest first), except that the integration files run in the
 * order of the components they need (`await needComponents(...)`): on a fresh machine `yarn test`
 * builds those in the background in that same order, so the files needing none run while the first
 * ones build, and each later file finds its components built or nearly so. When `yarn test` found
 * every component built before the tests began (KPROMO_COMPONENTS_READY), Vitest's order stands.
 */
export default class NeedsSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // yarn test saw every component built before starting Vitest: nothing to wait for.
    if (process.env.KPROMO_COMPONENTS_READY === '1') return sorted;
    const rank = new Map<string, number>();
    const rankOf = (f: TestSpecification) => {
      if (!f.project.name.startsWith('integration')) return -1;
      const known = rank.get(f.moduleId);
      if (known !== undefined) return known;
      const r = needRank(readFileSync(f.moduleId, 'utf8'));
      rank.set(f.moduleId, r);
      return r;
    };
    // Array.prototype.sort is stable: within a rank Vitest's own order stays.
    return sorted
      .map((f, i) => ({ f, i, r: rankOf(f) }))
      .sort((a, b) => a.r - b.r || a.i - b.i)
      .map(({ f }) => f);
  }
}
