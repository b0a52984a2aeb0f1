import { describe, expect, it } from 'vitest';
import { requiresStatusContext } from '../src/index.js';

describe('requiresStatusContext', () => {
  const p = (...requiredStatusContexts: string[]) => ({ requiredApprovals: 0, requiredStatusContexts });

  it('matches a context by name or by a glob pattern (Gitea’s status check patterns)', () => {
    expect(requiresStatusContext(p('kpromo/approval'), 'kpromo/approval')).toBe(true);
    expect(requiresStatusContext(p('ci/build', 'kpromo/*'), 'kpromo/approval')).toBe(true);
    expect(requiresStatusContext(p('kpromo/approva?'), 'kpromo/approval')).toBe(true);
    expect(requiresStatusContext(p('*'), 'kpromo/approval')).toBe(true);
  });

  it('does not match another context, a prefix, or a dot taken as any character', () => {
    expect(requiresStatusContext(p(), 'kpromo/approval')).toBe(false);
    expect(requiresStatusContext(p('kpromo/gates', 'kpromo/signatures'), 'kpromo/approval')).toBe(false);
    expect(requiresStatusContext(p('kpromo/approval-x'), 'kpromo/approval')).toBe(false);
    expect(requiresStatusContext(p('kpromo/approval.v2'), 'kpromo/approvalxv2')).toBe(false);
  });
});
