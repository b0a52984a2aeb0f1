import { describe, expect, it } from 'vitest';
import { shownCandidatesMismatch } from './shownCandidates.js';

const d = (c: string) => `sha256:${c.repeat(64)}`;
const cand = (application: string, digest: string) => ({ application, from: { tag: 'v2', digest } });
const TAIL = 'review the candidates from dev to prod again (GET /diff) and send the digests shown as expect';

describe('create-and-approve: are the candidates now the ones shown?', () => {
  it.each([
    {
      case: 'exactly the digests shown',
      now: [cand('web', d('a')), cand('api', d('b'))],
      shown: { api: d('b'), web: d('a') },
      want: undefined,
    },
    {
      case: 'a new digest deployed to the source since',
      now: [cand('web', d('c'))],
      shown: { web: d('a') },
      want: `not created: application web: you reviewed ${d('a')}, dev now runs ${d('c')}; ${TAIL}`,
    },
    {
      case: 'an application that became a candidate since',
      now: [cand('web', d('a')), cand('api', d('b'))],
      shown: { web: d('a') },
      want: `not created: application api (dev runs ${d('b')}) is a candidate you were not shown; ${TAIL}`,
    },
    {
      case: 'an application shown that is no longer a candidate',
      now: [cand('web', d('a'))],
      shown: { web: d('a'), api: d('b') },
      want: `not created: application api you reviewed (${d('b')}) is no longer a candidate from dev to prod; ${TAIL}`,
    },
    {
      case: 'a name inherited from Object.prototype is not a digest shown',
      now: [cand('constructor', d('a'))],
      shown: {},
      want: `not created: application constructor (dev runs ${d('a')}) is a candidate you were not shown; ${TAIL}`,
    },
    {
      case: 'many problems: the first five, and a count of the rest',
      now: ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((x) => cand(`app-${x}`, d('1'))),
      shown: {},
      want: `not created: ${['a', 'b', 'c', 'd', 'e'].map((x) => `application app-${x} (dev runs ${d('1')}) is a candidate you were not shown`).join('; ')} (and 2 more); ${TAIL}`,
    },
  ] as Array<{ case: string; now: ReturnType<typeof cand>[]; shown: Record<string, string>; want?: string }>)(
    '$case',
    ({ now, shown, want }) => {
      expect(shownCandidatesMismatch(now, shown, 'dev', 'prod')).toBe(want);
    },
  );
});
