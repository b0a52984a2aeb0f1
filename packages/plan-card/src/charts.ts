// The small charts of verification values, for the card (SVG) and for hosts without MCP Apps (text).
// Values are a check's latest measurements, oldest first; null where there was no data.

const BARS = '▁▂▃▄▅▆▇█';

/** The range the values span; a flat series is centred. */
function range(values: readonly (number | null)[]): { lo: number; span: number } | undefined {
  const nums = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (!nums.length) return undefined;
  const lo = Math.min(...nums);
  return { lo, span: Math.max(...nums) - lo };
}

/** `▁▃█ ·`: one bar per value, `·` where there was no data. */
export function sparkText(values: readonly (number | null)[]): string {
  const r = range(values);
  return values
    .map((v) => {
      if (v === null || !r || !Number.isFinite(v)) return '·';
      const i = r.span === 0 ? 3 : Math.round(((v - r.lo) / r.span) * (BARS.length - 1));
      return BARS[i];
    })
    .join('');
}

/**
 * The polyline segments of an SVG sparkline `width`×`height` (y grows downwards): one segment per
 * run of values with data, so a gap shows where there was none.
 */
export function sparkSegments(values: readonly (number | null)[], width: number, height: number): string[] {
  const r = range(values);
  if (!r) return [];
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  const y = (v: number) => (r.span === 0 ? height / 2 : height - ((v - r.lo) / r.span) * height);
  const segments: string[] = [];
  let run: string[] = [];
  values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) {
      if (run.length) segments.push(run.join(' '));
      run = [];
      return;
    }
    run.push(`${(i * step).toFixed(1)},${y(v).toFixed(1)}`);
  });
  if (run.length) segments.push(run.join(' '));
  return segments;
}
