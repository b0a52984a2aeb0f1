// The wave a continue call let start (continuedWave): the backend's log, `kpromo plan continue`,
// the scaffolder's kpromo:plan:continue output and a Port continue run all name this wave.
import { API_VERSION, type PromotionPlan } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { type ContinuedWave, continuedWave } from '../src/index.js';

const plan = (continuations: PromotionPlan['spec']['continuations'], waves = true): PromotionPlan => ({
  apiVersion: API_VERSION,
  kind: 'PromotionPlan',
  metadata: { name: 'rollout', namespace: 'shop', uid: 'u1' },
  spec: { flow: 'main', from: 'stable', to: 'prod', candidates: [], ...(continuations ? { continuations } : {}) },
  ...(waves
    ? {
        status: {
          phase: 'Promoting' as const,
          waves: [
            { name: 'canary', clusters: ['a'], phase: 'Succeeded' as const, pause: true },
            { name: 'eu', clusters: ['b', 'c'], phase: 'Promoting' as const, pause: true },
            { name: 'rest', clusters: ['d'], phase: 'Pending' as const },
          ],
        },
      }
    : {}),
});

// alice continued eu; bob then continued rest (appended after hers).
const both = plan([
  { wave: 'eu', user: 'alice' },
  { wave: 'rest', user: 'bob' },
]);

type Row = [string, PromotionPlan, Parameters<typeof continuedWave>[1], ContinuedWave | undefined];
const rows: Row[] = [
  ['the wave asked for, with its clusters', both, { wave: 'eu', user: 'bob' }, { name: 'eu', clusters: ['b', 'c'] }],
  ["no wave asked: the caller's last continuation", both, { user: 'alice' }, { name: 'eu', clusters: ['b', 'c'] }],
  ['the caller unknown to the door: the last continuation', both, {}, { name: 'rest', clusters: ['d'] }],
  ['an empty wave counts as none asked for', both, { wave: '', user: 'alice' }, { name: 'eu', clusters: ['b', 'c'] }],
  ['no continuation naming the caller, none asked for: none', both, { user: 'carol' }, undefined],
  ['a plan without continuations: none', plan(undefined), {}, undefined],
  [
    'a wave the status does not list yet: its name only',
    plan([{ wave: 'eu', user: 'alice' }], false),
    {},
    { name: 'eu' },
  ],
];

describe('continuedWave: the wave a continue call let start', () => {
  it.each(rows)('%s', (_title, p, asked, want) => {
    expect(continuedWave(p, asked)).toEqual(want);
  });
});
