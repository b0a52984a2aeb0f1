import type { FreezeWindow } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { evaluateFreeze, type SourcedWindow, windowStarts } from '../../src/policy/freezeWindows.js';

const iso = (ds: Date[]) => ds.map((d) => d.toISOString());
const starts = (w: Partial<FreezeWindow>, from: string, to: string) =>
  iso(windowStarts({ name: 'w', duration: '1h', ...w }, new Date(from), new Date(to)));
/** 1997 dates at 09:00 America/New_York: 13:00Z under EDT (UTC-4), 14:00Z under EST (UTC-5). */
const nine = (zone: 'EDT' | 'EST', ...days: string[]) =>
  days.map((d) => `${d}T${zone === 'EDT' ? '13' : '14'}:00:00.000Z`);

describe('windowStarts: RRULE against RFC 5545 section 3.8.5.3 examples (America/New_York)', () => {
  const ny = (rrule: string) => ({ rrule, timeZone: 'America/New_York' });
  const all = ['1997-01-01T00:00:00Z', '2001-01-01T00:00:00Z'] as const;

  it('weekly on Tuesday and Thursday for five weeks (UNTIL and COUNT forms)', () => {
    const want = nine(
      'EDT',
      ...['09-02', '09-04', '09-09', '09-11', '09-16', '09-18', '09-23', '09-25', '09-30', '10-02'].map(
        (d) => `1997-${d}`,
      ),
    );
    expect(
      starts(ny('DTSTART:19970902T090000\nRRULE:FREQ=WEEKLY;UNTIL=19971007T000000Z;WKST=SU;BYDAY=TU,TH'), ...all),
    ).toEqual(want);
    expect(starts(ny('DTSTART:19970902T090000\nRRULE:FREQ=WEEKLY;COUNT=10;WKST=SU;BYDAY=TU,TH'), ...all)).toEqual(want);
  });

  it('weekly for 10 occurrences, across the end of daylight saving time', () => {
    expect(starts(ny('DTSTART:19970902T090000\nRRULE:FREQ=WEEKLY;COUNT=10'), ...all)).toEqual([
      ...nine(
        'EDT',
        '1997-09-02',
        '1997-09-09',
        '1997-09-16',
        '1997-09-23',
        '1997-09-30',
        '1997-10-07',
        '1997-10-14',
        '1997-10-21',
      ),
      ...nine('EST', '1997-10-28', '1997-11-04'),
    ]);
  });

  it('monthly on the first Friday for 10 occurrences', () => {
    expect(starts(ny('DTSTART:19970905T090000\nRRULE:FREQ=MONTHLY;COUNT=10;BYDAY=1FR'), ...all)).toEqual([
      ...nine('EDT', '1997-09-05', '1997-10-03'),
      ...nine('EST', '1997-11-07', '1997-12-05', '1998-01-02', '1998-02-06', '1998-03-06', '1998-04-03'),
      ...nine('EDT', '1998-05-01', '1998-06-05'),
    ]);
  });

  it('every Friday the 13th, forever', () => {
    expect(starts(ny('DTSTART:19970902T090000\nRRULE:FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13'), ...all)).toEqual([
      ...nine('EST', '1998-02-13', '1998-03-13', '1998-11-13'),
      ...nine('EDT', '1999-08-13', '2000-10-13'),
    ]);
  });

  it('WKST changes which days an every-other-week rule generates', () => {
    const rule = (wkst: string) =>
      ny(`DTSTART:19970805T090000\nRRULE:FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=${wkst}`);
    expect(starts(rule('MO'), ...all)).toEqual(nine('EDT', '1997-08-05', '1997-08-10', '1997-08-19', '1997-08-24'));
    expect(starts(rule('SU'), ...all)).toEqual(nine('EDT', '1997-08-05', '1997-08-17', '1997-08-19', '1997-08-31'));
  });

  it('an invalid date (February 30) is ignored', () => {
    expect(
      starts(
        ny('DTSTART:20070115T090000\nRRULE:FREQ=MONTHLY;BYMONTHDAY=15,30;COUNT=5'),
        '2007-01-01T00:00:00Z',
        '2008-01-01T00:00:00Z',
      ),
    ).toEqual([
      '2007-01-15T14:00:00.000Z',
      '2007-01-30T14:00:00.000Z',
      '2007-02-15T14:00:00.000Z',
      '2007-03-15T13:00:00.000Z',
      '2007-03-30T13:00:00.000Z',
    ]);
  });
});

describe('windowStarts: local times that do not exist or repeat (RFC 5545 section 3.3.5)', () => {
  it('02:30 on a spring-forward day means 03:30 new time (America/New_York 2007-03-11 -> 07:30Z)', () => {
    expect(
      starts(
        { rrule: 'FREQ=DAILY;BYHOUR=2;BYMINUTE=30', timeZone: 'America/New_York' },
        '2007-03-10T00:00:00Z',
        '2007-03-13T00:00:00Z',
      ),
    ).toEqual(['2007-03-10T07:30:00.000Z', '2007-03-11T07:30:00.000Z', '2007-03-12T06:30:00.000Z']);
  });

  it('01:30 on a fall-back day means the first 01:30, still EDT (America/New_York 2007-11-04 -> 05:30Z)', () => {
    expect(
      starts(
        { rrule: 'FREQ=DAILY;BYHOUR=1;BYMINUTE=30', timeZone: 'America/New_York' },
        '2007-11-03T00:00:00Z',
        '2007-11-06T00:00:00Z',
      ),
    ).toEqual(['2007-11-03T05:30:00.000Z', '2007-11-04T05:30:00.000Z', '2007-11-05T06:30:00.000Z']);
  });

  it('Europe/Berlin Fridays 16:00 before and after the 2026-03-29 switch', () => {
    const fri = { rrule: 'FREQ=WEEKLY;BYDAY=FR;BYHOUR=16;BYMINUTE=0', timeZone: 'Europe/Berlin' };
    // 16:00 CET (UTC+1) is 15:00Z; 16:00 CEST (UTC+2) is 14:00Z.
    expect(starts(fri, '2026-03-23T00:00:00Z', '2026-04-05T00:00:00Z')).toEqual([
      '2026-03-27T15:00:00.000Z',
      '2026-04-03T14:00:00.000Z',
    ]);
  });

  it('does not depend on the time zone of the controller process', () => {
    const before = process.env.TZ;
    try {
      process.env.TZ = 'Pacific/Chatham';
      expect(
        starts(
          { rrule: 'FREQ=DAILY;BYHOUR=9;BYMINUTE=0', timeZone: 'Europe/Berlin' },
          '2026-03-27T00:00:00Z',
          '2026-03-29T23:00:00Z',
        ),
      ).toEqual(['2026-03-27T08:00:00.000Z', '2026-03-28T08:00:00.000Z', '2026-03-29T07:00:00.000Z']);
    } finally {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
    }
  });

  it('a UTC UNTIL is an instant, not a local time', () => {
    // 2026-03-27 16:00 CET is 15:00Z, so UNTIL=...T150000Z still includes it.
    const w = { rrule: 'FREQ=DAILY;BYHOUR=16;BYMINUTE=0;UNTIL=20260327T150000Z', timeZone: 'Europe/Berlin' };
    expect(starts(w, '2026-03-26T00:00:00Z', '2026-03-30T00:00:00Z')).toEqual([
      '2026-03-26T15:00:00.000Z',
      '2026-03-27T15:00:00.000Z',
    ]);
  });

  it('without DTSTART, INTERVAL counts from 1970-01-01T00:00 local', () => {
    // 2026-01-01T00:00Z is 20454 days = 490896 hours after the epoch; 490896 = 5 * 98179 + 1.
    expect(starts({ rrule: 'FREQ=HOURLY;INTERVAL=5' }, '2026-01-01T00:00:00Z', '2026-01-01T12:00:00Z')).toEqual([
      '2026-01-01T04:00:00.000Z',
      '2026-01-01T09:00:00.000Z',
    ]);
  });
});

describe('windowStarts: cron (crontab(5) semantics)', () => {
  it('"0 16 * * 5" is Fridays at 16:00', () => {
    expect(starts({ schedule: '0 16 * * 5' }, '2026-01-01T00:00:00Z', '2026-01-17T00:00:00Z')).toEqual([
      '2026-01-02T16:00:00.000Z',
      '2026-01-09T16:00:00.000Z',
      '2026-01-16T16:00:00.000Z',
    ]);
  });

  it('"30 4 1,15 * 5" runs on the 1st and 15th and also every Friday', () => {
    // January 2026: the 1st and 15th are Thursdays; the Fridays are the 2nd, 9th and 16th.
    expect(starts({ schedule: '30 4 1,15 * 5' }, '2026-01-01T00:00:00Z', '2026-01-17T00:00:00Z')).toEqual(
      ['01', '02', '09', '15', '16'].map((d) => `2026-01-${d}T04:30:00.000Z`),
    );
  });

  it('"23 0-23/2 * * *" runs 23 minutes after every even hour; 0 and 7 are Sunday', () => {
    expect(starts({ schedule: '23 0-23/2 * * *' }, '2026-01-01T00:00:00Z', '2026-01-01T05:00:00Z')).toEqual([
      '2026-01-01T00:23:00.000Z',
      '2026-01-01T02:23:00.000Z',
      '2026-01-01T04:23:00.000Z',
    ]);
    const sunday = ['2026-01-04T00:00:00.000Z', '2026-01-11T00:00:00.000Z'];
    expect(starts({ schedule: '0 0 * * 0' }, '2026-01-01T00:00:00Z', '2026-01-12T00:00:00Z')).toEqual(sunday);
    expect(starts({ schedule: '0 0 * * 7' }, '2026-01-01T00:00:00Z', '2026-01-12T00:00:00Z')).toEqual(sunday);
  });

  it('keeps local wall-clock time across DST: 09:00 Europe/Berlin', () => {
    // 2026-03-29 is the spring-forward day: 09:00 CEST is 07:00Z; 09:00 CET on the 27th is 08:00Z.
    expect(
      starts({ schedule: '0 9 * * *', timeZone: 'Europe/Berlin' }, '2026-03-27T00:00:00Z', '2026-03-30T00:00:00Z'),
    ).toEqual(['2026-03-27T08:00:00.000Z', '2026-03-28T08:00:00.000Z', '2026-03-29T07:00:00.000Z']);
  });

  it('a job in the repeated hour is not re-run, one in the skipped hour still runs after the change', () => {
    const at0230 = { schedule: '30 2 * * *', timeZone: 'Europe/Berlin' };
    // 2026-10-25: 02:30 CEST (00:30Z) and 02:30 CET (01:30Z) both exist; only the first counts.
    expect(starts(at0230, '2026-10-24T12:00:00Z', '2026-10-25T12:00:00Z')).toEqual(['2026-10-25T00:30:00.000Z']);
    // 2026-03-29: clocks jump from 02:00 CET (01:00Z) to 03:00 CEST, 02:30 does not exist.
    const spring = starts(at0230, '2026-03-28T12:00:00Z', '2026-03-29T12:00:00Z');
    expect(spring).toHaveLength(1);
    expect(spring[0] >= '2026-03-29T01:00:00.000Z' && spring[0] <= '2026-03-29T01:30:00.000Z').toBe(true);
  });
});

const at = (s: string) => new Date(s);
const src = 'Environment prod';
const sw = (window: Partial<FreezeWindow> & { name: string }, source = src): SourcedWindow => ({ window, source });
/** Fridays 16:00 until Monday 08:00 UTC. */
const weekend = sw({ name: 'weekend', schedule: '0 16 * * 5', duration: '64h', reason: 'no Friday deploys' });

describe('evaluateFreeze: deny windows', () => {
  it('no windows: not frozen', () => {
    expect(evaluateFreeze([], at('2026-01-03T12:00:00Z'))).toEqual({ frozen: false });
  });

  it('an open deny window freezes until it closes', () => {
    expect(evaluateFreeze([weekend], at('2026-01-03T12:00:00Z'))).toEqual({
      frozen: true,
      window: 'weekend',
      source: src,
      reason: 'no Friday deploys',
      until: at('2026-01-05T08:00:00Z'),
    });
  });

  it('closed before the start and at the end (end is exclusive)', () => {
    expect(evaluateFreeze([weekend], at('2026-01-02T15:59:00Z')).frozen).toBe(false);
    expect(evaluateFreeze([weekend], at('2026-01-02T16:00:00Z')).frozen).toBe(true);
    expect(evaluateFreeze([weekend], at('2026-01-05T07:59:59Z')).frozen).toBe(true);
    expect(evaluateFreeze([weekend], at('2026-01-05T08:00:00Z')).frozen).toBe(false);
  });

  it('an RRULE window in Europe/Berlin lasts its duration in elapsed time across the DST switch', () => {
    const w = sw({
      name: 'fri',
      rrule: 'FREQ=WEEKLY;BYDAY=FR;BYHOUR=16;BYMINUTE=0',
      timeZone: 'Europe/Berlin',
      duration: '64h',
    });
    // Opens Fri 2026-03-27 16:00 CET = 15:00Z; 64h later is Mon 2026-03-30 07:00Z (09:00 CEST).
    expect(evaluateFreeze([w], at('2026-03-27T14:59:00Z')).frozen).toBe(false);
    const v = evaluateFreeze([w], at('2026-03-28T12:00:00Z'));
    expect(v).toMatchObject({ frozen: true, window: 'fri', until: at('2026-03-30T07:00:00Z') });
    expect(evaluateFreeze([w], at('2026-03-30T07:00:00Z')).frozen).toBe(false);
  });

  it('a cron window in Europe/Berlin follows local time on the spring-forward day', () => {
    const w = sw({ name: 'standup', schedule: '0 9 * * *', timeZone: 'Europe/Berlin', duration: '1h' });
    expect(evaluateFreeze([w], at('2026-03-29T07:30:00Z'))).toMatchObject({
      frozen: true,
      until: at('2026-03-29T08:00:00Z'),
    });
    expect(evaluateFreeze([w], at('2026-03-29T08:30:00Z')).frozen).toBe(false);
    expect(evaluateFreeze([w], at('2026-03-27T08:30:00Z')).frozen).toBe(true);
  });

  it('a one-off window is open from start (inclusive) to end (exclusive)', () => {
    const w = sw({ name: 'launch', start: '2026-02-02T10:00:00Z', end: '2026-02-02T12:00:00+01:00' });
    expect(evaluateFreeze([w], at('2026-02-02T09:59:59Z')).frozen).toBe(false);
    expect(evaluateFreeze([w], at('2026-02-02T10:00:00Z'))).toEqual({
      frozen: true,
      window: 'launch',
      source: src,
      until: at('2026-02-02T11:00:00Z'),
    });
    expect(evaluateFreeze([w], at('2026-02-02T11:00:00Z')).frozen).toBe(false);
  });

  it('until follows overlapping and back-to-back deny windows', () => {
    const a = sw({ name: 'a', start: '2026-02-02T10:00:00Z', end: '2026-02-02T12:00:00Z' });
    const b = sw({ name: 'b', schedule: '30 11 * * *', duration: '2h' }, 'stage prod of flow shop');
    const c = sw({ name: 'c', start: '2026-02-02T13:30:00Z', end: '2026-02-02T14:00:00Z' });
    const d = sw({ name: 'd', start: '2026-02-02T15:00:00Z', end: '2026-02-02T16:00:00Z' });
    expect(evaluateFreeze([a, d], at('2026-02-02T10:30:00Z')).until).toEqual(at('2026-02-02T12:00:00Z'));
    expect(evaluateFreeze([a, b, d], at('2026-02-02T10:30:00Z'))).toMatchObject({
      window: 'a',
      until: at('2026-02-02T13:30:00Z'),
    });
    expect(evaluateFreeze([a, b, c, d], at('2026-02-02T10:30:00Z')).until).toEqual(at('2026-02-02T14:00:00Z'));
    expect(evaluateFreeze([a, b, c, d], at('2026-02-02T12:30:00Z'))).toMatchObject({
      window: 'b',
      source: 'stage prod of flow shop',
      until: at('2026-02-02T14:00:00Z'),
    });
  });

  it('a freeze that does not end within the look-ahead has no until', () => {
    const always = sw({ name: 'always', schedule: '0 0 * * *', duration: '25h' });
    const v = evaluateFreeze([always], at('2026-02-02T10:00:00Z'));
    expect(v.frozen).toBe(true);
    expect(v.until).toBeUndefined();
  });
});

describe('evaluateFreeze: allow windows', () => {
  /** Weekdays 09:00-17:00 Europe/Berlin (08:00Z-16:00Z in winter). */
  const office = sw({
    name: 'office',
    kind: 'allow',
    schedule: '0 9 * * 1-5',
    timeZone: 'Europe/Berlin',
    duration: '8h',
  });

  it('inside an allow window: not frozen', () => {
    expect(evaluateFreeze([office], at('2026-01-07T10:00:00Z'))).toEqual({ frozen: false });
  });

  it('outside every allow window: frozen until the next one opens', () => {
    const sat = evaluateFreeze([office], at('2026-01-10T10:00:00Z'));
    expect(sat).toMatchObject({
      frozen: true,
      window: 'outside allow windows',
      source: src,
      until: at('2026-01-12T08:00:00Z'),
    });
    expect(sat.reason).toContain('office');
    expect(evaluateFreeze([office], at('2026-01-09T16:00:00Z')).until).toEqual(at('2026-01-12T08:00:00Z'));
  });

  it('the next opening is the earliest over all allow windows, RRULE and one-off included', () => {
    const tue = sw({ name: 'tue', kind: 'allow', rrule: 'FREQ=WEEKLY;BYDAY=TU;BYHOUR=10;BYMINUTE=0', duration: '2h' });
    const once = sw({ name: 'once', kind: 'allow', start: '2026-01-11T06:00:00Z', end: '2026-01-11T07:00:00Z' });
    // Saturday 2026-01-10: the one-off opens Sunday 06:00Z, before Monday's office hours.
    expect(evaluateFreeze([office, tue, once], at('2026-01-10T10:00:00Z')).until).toEqual(at('2026-01-11T06:00:00Z'));
    // Wednesday 2026-01-07 18:00Z: the office opens Thursday 08:00Z, Tuesday's window only next week.
    expect(evaluateFreeze([tue], at('2026-01-07T18:00:00Z')).until).toEqual(at('2026-01-13T10:00:00Z'));
  });

  it('only past allow windows: frozen without until', () => {
    const past = sw({ name: 'past', kind: 'allow', start: '2025-01-01T00:00:00Z', end: '2025-01-02T00:00:00Z' });
    const v = evaluateFreeze([past], at('2026-01-10T10:00:00Z'));
    expect(v.frozen).toBe(true);
    expect(v.until).toBeUndefined();
  });

  it('an open deny window wins over an open allow window', () => {
    const lunch = sw({ name: 'lunch', schedule: '0 12 * * *', timeZone: 'Europe/Berlin', duration: '1h' });
    expect(evaluateFreeze([office, lunch], at('2026-01-07T11:30:00Z'))).toMatchObject({
      frozen: true,
      window: 'lunch',
      until: at('2026-01-07T12:00:00Z'),
    });
    expect(evaluateFreeze([office, lunch], at('2026-01-07T12:30:00Z')).frozen).toBe(false);
  });
});

describe('evaluateFreeze: invalid windows fail closed', () => {
  const now = at('2026-01-07T10:00:00Z');
  const source = 'stage prod of flow shop';
  it.each([
    ['cron with an out-of-range hour', { schedule: '0 25 * * *', duration: '1h' }, '0 25 * * *'],
    ['cron with 4 fields', { schedule: '0 16 * 5', duration: '1h' }, '5 fields'],
    ['cron with a seconds field', { schedule: '0 0 16 * * 5', duration: '1h' }, '5 fields'],
    ['RRULE with an unknown weekday', { rrule: 'FREQ=WEEKLY;BYDAY=XX', duration: '1h' }, 'XX'],
    ['RRULE with an unknown frequency', { rrule: 'FREQ=FORTNIGHTLY', duration: '1h' }, 'FREQ'],
    ['RRULE without FREQ', { rrule: 'BYDAY=MO', duration: '1h' }, 'FREQ is required'],
    ['RRULE with BYHOUR=25', { rrule: 'FREQ=DAILY;BYHOUR=25', duration: '1h' }, 'BYHOUR'],
    ['RRULE with an unknown part', { rrule: 'FREQ=DAILY;BYFOO=1', duration: '1h' }, 'BYFOO'],
    // RFC 5545 3.3.10: "MUST NOT be specified" combinations.
    ['RRULE with a numbered BYDAY and FREQ=WEEKLY', { rrule: 'FREQ=WEEKLY;BYDAY=1MO', duration: '1h' }, '1MO'],
    [
      'RRULE with a numbered BYDAY and FREQ=MINUTELY',
      { rrule: 'FREQ=MINUTELY;BYDAY=-1SU', duration: '1h' },
      'MINUTELY',
    ],
    ['RRULE with BYWEEKNO and FREQ=MONTHLY', { rrule: 'FREQ=MONTHLY;BYWEEKNO=20', duration: '1h' }, 'BYWEEKNO'],
    ['RRULE with BYYEARDAY and FREQ=DAILY', { rrule: 'FREQ=DAILY;BYYEARDAY=100', duration: '1h' }, 'BYYEARDAY'],
    ['RRULE with BYMONTHDAY and FREQ=WEEKLY', { rrule: 'FREQ=WEEKLY;BYMONTHDAY=1', duration: '1h' }, 'BYMONTHDAY'],
    ['RRULE with COUNT but no DTSTART', { rrule: 'FREQ=DAILY;COUNT=3', duration: '1h' }, 'COUNT'],
    ['unknown time zone', { schedule: '0 16 * * 5', duration: '1h', timeZone: 'Mars/Olympus' }, 'Mars/Olympus'],
    ['one-off without offset', { start: '2026-01-07T09:00:00', end: '2026-01-07T11:00:00Z' }, 'start'],
    ['one-off ending before it starts', { start: '2026-01-07T11:00:00Z', end: '2026-01-07T09:00:00Z' }, 'after'],
    ['recurring window without duration', { schedule: '0 16 * * 5' }, 'duration'],
    ['zero duration', { schedule: '0 16 * * 5', duration: '0s' }, 'duration'],
    ['schedule and rrule together', { schedule: '0 16 * * 5', rrule: 'FREQ=DAILY', duration: '1h' }, 'exactly one'],
  ])('%s', (_, window, detail) => {
    for (const kind of ['deny', 'allow'] as const) {
      const v = evaluateFreeze([sw({ name: 'bad', kind, ...window }, source)], now);
      expect(v.frozen).toBe(true);
      expect(v.window).toBe('bad');
      expect(v.source).toBe(source);
      expect(v.invalid).toContain(`freeze window "bad" (${source})`);
      expect(v.invalid).toContain(detail);
    }
  });

  it('an invalid window freezes even next to valid, closed windows', () => {
    const ok = sw({ name: 'ok', schedule: '0 16 * * 5', duration: '1h' });
    const bad = sw({ name: 'bad', schedule: 'every friday', duration: '1h' });
    expect(evaluateFreeze([ok], now).frozen).toBe(false);
    const v = evaluateFreeze([ok, bad], now);
    expect(v.frozen).toBe(true);
    expect(v.invalid).toContain('every friday');
  });
});
