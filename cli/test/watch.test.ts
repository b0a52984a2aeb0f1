import { describe, expect, it } from 'vitest';
import { planDisplay, type Terminal } from '../src/watch.js';
import { plan, progress } from './fixtures.js';

const recorder = (tty: boolean, columns?: number) => {
  const writes: string[] = [];
  const t: Terminal = { write: (s) => void writes.push(s), tty, columns };
  return { t, writes };
};

const running = plan(['cart', 'web'], {
  phase: 'Promoting',
  apps: [progress('cart', 'Copying'), progress('web', 'Pending')],
});
const moved = plan(['cart', 'web'], {
  phase: 'Promoting',
  apps: [progress('cart', 'RollingOut'), progress('web', 'Copying')],
});

describe('plan display', () => {
  it('on a terminal: the first frame as is, later frames drawn over it, an unchanged plan not at all', () => {
    const { t, writes } = recorder(true);
    const show = planDisplay(t, 'table');
    show(running);
    show(running);
    show(moved);
    expect(writes).toHaveLength(2);
    expect(writes[0]).not.toContain('\x1b');
    expect(writes[0].split('\n')).toHaveLength(5); // headline, header, 2 rows, final newline
    // Back up the 4 lines drawn before, clear, draw the new frame.
    expect(writes[1].startsWith('\x1b[4A\r\x1b[J')).toBe(true);
    expect(writes[1]).toContain('cart          RollingOut');
  });

  it('on a terminal: lines are cut to its width so a frame never wraps', () => {
    const { t, writes } = recorder(true, 20);
    planDisplay(t, 'table')(running);
    for (const line of writes[0].trimEnd().split('\n')) expect([...line].length).toBeLessThanOrEqual(20);
  });

  it('not a terminal: one line per change, no escape sequences', () => {
    const { t, writes } = recorder(false);
    const show = planDisplay(t, 'table');
    show(running);
    show(moved);
    const text = writes.join('');
    expect(text).not.toContain('\x1b');
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines.slice(3).map((l) => l.replace(/^\S+ /, ''))).toEqual([
      'cart RollingOut v1 → v2',
      'web Copying v1 → v2',
    ]);
  });

  it('-o json: one PlanProgress document per change', () => {
    const { t, writes } = recorder(false);
    const show = planDisplay(t, 'json');
    show(running);
    show(running);
    show(moved);
    expect(writes).toHaveLength(2);
    const docs = writes.map((w) => JSON.parse(w));
    expect(docs.map((d) => d.apps.map((a: { phase: string }) => a.phase))).toEqual([
      ['Copying', 'Pending'],
      ['RollingOut', 'Copying'],
    ]);
  });
});
