// `kpromo plan continue`: its flags, and arguments refused by the wire contract (ContinueBody) before
// any session is opened (no cluster needed).
import { fleetPlan } from '@kpromo/test-harness/fleetPlan';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../src/exitCodes.js';
import { buildProgram } from '../src/program.js';
import { continuedText } from '../src/views.js';
import { runKpromo } from './inProcess.js';

describe('kpromo plan continue', () => {
  it('takes the plan name, --wave, --comment, --uid and the follow flags', () => {
    const plan = buildProgram().commands.find((c) => c.name() === 'plan')!;
    const cont = plan.commands.find((c) => c.name() === 'continue')!;
    expect(cont.registeredArguments.map((a) => [a.name(), a.required])).toEqual([['name', true]]);
    expect(cont.options.map((o) => o.long).sort()).toEqual(['--comment', '--timeout', '--uid', '--watch', '--wave']);
    expect(cont.description()).toMatch(/RBAC verb continue/);
  });

  it('refuses a wave that is no wave name, a bad uid or plan name, as the HTTP API would (exit 2)', async () => {
    const bad = await runKpromo(['plan', 'continue', 'rollout', '--wave', 'Canary_1']);
    expect(bad.code).toBe(EXIT.USAGE);
    expect(bad.err).toBe(
      'invalid arguments: wave: must be a wave name (a DNS label: lower-case letters, digits and "-", at most 63)',
    );
    const uid = await runKpromo(['plan', 'continue', 'rollout', '--uid', 'not a uid']);
    expect(uid).toMatchObject({ code: EXIT.USAGE, err: expect.stringMatching(/^invalid arguments: uid: /) });
    const long = await runKpromo(['plan', 'continue', 'rollout', '--comment', 'x'.repeat(1025)]);
    expect(long).toMatchObject({
      code: EXIT.USAGE,
      err: 'invalid arguments: comment: must be at most 1024 characters',
    });
    const name = await runKpromo(['plan', 'continue', 'Rollout!']);
    expect(name).toMatchObject({ code: EXIT.USAGE, err: expect.stringMatching(/^invalid arguments: name: /) });
  });

  it("prints the wave the caller's continuation let start, with its clusters", () => {
    const p = fleetPlan();
    p.spec.continuations = [
      { wave: 'eu', user: 'rita' },
      { wave: 'rest', user: 'sam' },
    ];
    expect(continuedText(p, 'rita')).toBe(
      'promotionplan shop/release-42: wave eu (prod-eu-2, prod-eu-3) continued by rita',
    );
    expect(continuedText(p, 'sam', 'rest')).toBe(
      'promotionplan shop/release-42: wave rest (prod-us-1) continued by sam',
    );
    expect(continuedText(p, 'uma')).toBe('promotionplan shop/release-42: wave ? continued by uma');
  });
});
