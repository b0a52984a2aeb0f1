// `kpromo plan approve`: an override of freezes and line stops needs its reason, refused by the wire
// contract (ApproveBody) before any session is opened (no cluster needed).
import { OVERRIDE_REASON_REQUIRED, OVERRIDE_REASON_TOO_SHORT } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../src/exitCodes.js';
import { runKpromo } from './inProcess.js';

describe('kpromo plan approve', () => {
  const approve = (...flags: string[]) => runKpromo(['plan', 'approve', 'hotfix', '--uid', 'ab-12', ...flags]);

  it('refuses --override-freeze without --override-reason, or with less than a sentence (exit 2)', async () => {
    expect(await approve('--override-freeze')).toMatchObject({
      code: EXIT.USAGE,
      err: `invalid arguments: overrideReason: ${OVERRIDE_REASON_REQUIRED}`,
    });
    expect(await approve('--override-freeze', '--override-reason', 'hotfix')).toMatchObject({
      code: EXIT.USAGE,
      err: `invalid arguments: overrideReason: ${OVERRIDE_REASON_TOO_SHORT}`,
    });
    expect(await approve('--override-reason', 'payments down, hotfix v1.1.1')).toMatchObject({
      code: EXIT.USAGE,
      err: expect.stringMatching(/^invalid arguments: overrideReason: is only for an approval with overrideFreeze/),
    });
  });
});
