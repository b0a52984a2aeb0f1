import type { CheckVars } from '../extension/checkProvider.js';

export type { CheckVars };

const NAMES = ['application', 'namespace', 'environment', 'version', 'previousVersion', 'digest'] as const;

/** Escapes a value for a PromQL string literal ("..." or '...'): a value can never end the string early. */
export const promqlString = (v: string) => v.replace(/[\\"'`]/g, (c) => `\\${c}`).replace(/\n/g, '\\n');

/**
 * Pure: `template` with every {name} replaced through `quote`. A template that names
 * {previousVersion} when there is none yields undefined (a baseline without a previous version).
 */
export function renderTemplate(template: string, vars: CheckVars, quote: (v: string) => string): string | undefined {
  let out = template;
  for (const n of NAMES) {
    const token = `{${n}}`;
    if (!out.includes(token)) continue;
    const v = vars[n];
    if (v === undefined) return undefined;
    out = out.replaceAll(token, quote(v));
  }
  return out;
}
