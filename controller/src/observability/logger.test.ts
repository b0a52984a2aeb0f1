import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';

function sink() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, destination };
}

describe('createLogger', () => {
  const saved = process.env.KPROMO_LOG_LEVEL;
  afterEach(() => {
    if (saved === undefined) delete process.env.KPROMO_LOG_LEVEL;
    else process.env.KPROMO_LOG_LEVEL = saved;
  });

  it('writes JSON lines with a string level and ISO time, default info', () => {
    delete process.env.KPROMO_LOG_LEVEL;
    const { lines, destination } = sink();
    const log = createLogger({ destination });
    log.debug('hidden');
    log.child({ plan: 'p1' }).info({ app: 'cart' }, 'copied');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'info',
      msg: 'copied',
      plan: 'p1',
      app: 'cart',
      name: 'kpromo-controller',
    });
    expect(String(lines[0].time)).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('takes the level from KPROMO_LOG_LEVEL and rejects unknown levels', () => {
    process.env.KPROMO_LOG_LEVEL = 'debug';
    const { lines, destination } = sink();
    createLogger({ destination }).debug('shown');
    expect(lines.map((l) => l.msg)).toEqual(['shown']);
    process.env.KPROMO_LOG_LEVEL = 'loud';
    expect(() => createLogger()).toThrow(/KPROMO_LOG_LEVEL="loud" is not a log level/);
  });
});
