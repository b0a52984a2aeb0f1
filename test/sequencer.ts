import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { TEST_COMPONENTS, type TestComponent } from './cluster/need.js';
import fileTimes from './fileTimes.json' with { type: 'json' };

/** The latest position in the build order among the components a file declares (-1: none). */
export function needRank(source: string): number {
  let rank = -1;
  for (const call of source.matchAll(/needComponents\(([^)]*)\)/g))
    for (const [, id] of call[1].matchAll(/['"]([a-z-]+)['"]/g))
      rank = Math.max(rank, TEST_COMPONENTS.indexOf(id as TestComponent));
  return rank;
}

export interface FileToOrder {
  /** Path from the repository root. */
  file: string;
  /** needRank of its source; -1 for a file that needs no component (and for every unit file). */
  rank: number;
}

/**
 * Pure: the order integration files start in, longest first (`seconds`: each file's time in a
 * measured run, test/fileTimes.json). Four files share the machine: a long file started last is the
 * run's tail, while short ones fill the gaps the long ones leave. A file not measured yet goes first,
 * as Vitest does with files it has no time for. While components still build (`componentsReady`
 * false), the files run in the order those are built first (needRank): the files needing none start
 * while the first ones compile. Stable: equal keys keep the order given.
 */
export function orderIntegrationFiles<T extends FileToOrder>(
  files: readonly T[],
  seconds: Readonly<Record<string, number>>,
  componentsReady: boolean,
): T[] {
  const time = (f: T) => seconds[f.file] ?? Number.POSITIVE_INFINITY;
  return files
    .map((f, i) => ({ f, i }))
    .sort((a, b) => (componentsReady ? 0 : a.f.rank - b.f.rank) || time(b.f) - time(a.f) || a.i - b.i)
    .map(({ f }) => f);
}

/**
 * Vitest's order (projects in their group order, failed first, then slowest first) for the unit
 * project; the integration projects' files by orderIntegrationFiles. Vitest's own times live in
 * node_modules and so are missing in every fresh clone, CI's included, where it would fall back to
 * the largest file first: a 6 KB file of two-minute fault tests then started last.
 */
export default class NeedsSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // yarn test saw every component built before starting Vitest: nothing to wait for.
    const ready = process.env.KPROMO_COMPONENTS_READY === '1';
    const integration = (f: TestSpecification) => f.project.name.startsWith('integration');
    const toOrder = sorted.filter(integration).map((spec) => ({
      spec,
      file: relative(spec.project.config.root, spec.moduleId),
      rank: needRank(readFileSync(spec.moduleId, 'utf8')),
    }));
    // Projects keep Vitest's order (group order first); within a project, the order above.
    const byProject = new Map<string, typeof toOrder>();
    for (const f of toOrder) byProject.set(f.spec.project.name, [...(byProject.get(f.spec.project.name) ?? []), f]);
    const ordered = new Map(
      [...byProject].map(([name, group]) => [name, orderIntegrationFiles(group, fileTimes.seconds, ready)]),
    );
    const next = new Map([...ordered].map(([name]) => [name, 0]));
    return sorted.map((spec) => {
      if (!integration(spec)) return spec;
      const name = spec.project.name;
      const i = next.get(name) ?? 0;
      next.set(name, i + 1);
      return (ordered.get(name) ?? [])[i].spec;
    });
  }
}
