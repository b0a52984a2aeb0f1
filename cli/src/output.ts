import { stringify } from 'yaml';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/**
 * What a command prints: with -o json|yaml the API's answer as the HTTP API returns it (scripts can
 * switch between the two), otherwise its human form.
 */
export function render(format: OutputFormat, data: unknown, human: () => string): string {
  if (format === 'json') return `${JSON.stringify(data, null, 2)}\n`;
  if (format === 'yaml') return stringify(data);
  const text = human();
  return text === '' || text.endsWith('\n') ? text : `${text}\n`;
}
