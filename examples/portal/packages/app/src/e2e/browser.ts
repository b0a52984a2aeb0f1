// Browser helpers for the portal's end-to-end test: every page visit checks the console for errors,
// runs axe-core (WCAG 2.1 A/AA) and fails on serious or critical violations, checks the tab title and
// writes a screenshot to docs/screenshots/.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export const SCREENSHOTS = join(import.meta.dirname, '../../../../../../docs/screenshots');

/**
 * Serious violations inside Backstage's own components, which this repository cannot change; each
 * is matched by page, rule and element so that nothing else slips through. Reported upstream
 * material, not ours: the catalog table's sortable headers (MUI TableSortLabel, role=button inside
 * a header with focusable content), the header tabs of plugin pages without tab panels (user
 * settings), the catalog graph's unlabelled filter fields, and the search page's result items
 * rendered as <li> outside a list.
 */
export const UPSTREAM_AXE_EXCEPTIONS: Array<{ path: RegExp; rule: string; target: RegExp; why: string }> = [
  {
    path: /^\/catalog$/,
    rule: 'nested-interactive',
    target: /MuiTableSortLabel/,
    why: '@backstage/plugin-catalog: sortable table headers (MUI TableSortLabel) in the catalog table',
  },
  {
    path: /^\/settings/,
    rule: 'aria-valid-attr-value',
    target: /-tab-/,
    why: '@backstage/plugin-app PageLayout: header tabs whose aria-controls name no tab panel',
  },
  {
    path: /^\/catalog-graph/,
    rule: 'label',
    target: /^#mui-\d+$/,
    why: '@backstage/plugin-catalog-graph: the filter autocompletes (MUI) without labels',
  },
  {
    path: /^\/search/,
    rule: 'listitem',
    target: /MuiListItem/,
    why: '@backstage/plugin-search: result items rendered as <li> without a list',
  },
];

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/** axe-core's serious and critical WCAG 2.1 A/AA violations on the page, minus the upstream exceptions. */
export async function seriousViolations(page: Page, path: string): Promise<AxeViolation[]> {
  // evaluate, not a script tag: the app's Content-Security-Policy forbids inline scripts, rightly.
  await page.evaluate(AXE_SOURCE);
  const all = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: unknown, o: unknown) => Promise<unknown> } }).axe;
    // react-aria's live announcer (an off-screen log region) keeps references to messages it has
    // already read out: not page content.
    const r = (await axe.run(
      { include: [['body']], exclude: [['[data-live-announcer]']] },
      {
        runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
      },
    )) as {
      violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }>;
    };
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.map((n) => n.target.join(' ')),
    }));
  });
  return all
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({
      ...v,
      targets: v.targets.filter(
        (t) => !UPSTREAM_AXE_EXCEPTIONS.some((x) => x.path.test(path) && x.rule === v.id && x.target.test(t)),
      ),
    }))
    .filter((v) => v.targets.length > 0);
}

/** Console errors and uncaught exceptions, per page visit. */
export class ConsoleWatch {
  private errors: string[] = [];

  constructor(page: Page) {
    page.on('console', (m) => {
      if (m.type() === 'error') this.errors.push(`${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (e) => this.errors.push(`uncaught ${e.name}: ${e.message}`));
  }

  /** The errors since the last call, minus those `expected` says are part of what the page shows. */
  take(expected?: RegExp): string[] {
    const out = this.errors.filter((e) => !expected?.test(e));
    this.errors = [];
    return out;
  }
}
