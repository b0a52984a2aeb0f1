import { describe, expect, it } from 'vitest';
import { type Kustomization, kustomizationVerdict, revisionIs } from './fluxKustomization.js';

// Revision formats from Flux's RFC-0005 ("<branch>@sha1:<hash>", since Flux 2.1) and the older
// "<branch>/<hash>" that Flux 0.x/2.0 wrote.
const C = '8a3b9f1c2d4e5f60718293a4b5c6d7e8f9a0b1c2';
const OTHER = '1111111111111111111111111111111111111111';

const ks = (status: Kustomization['status'], extra: Partial<Kustomization> = {}): Kustomization => ({
  metadata: { name: 'web', namespace: 'flux-system', generation: 3 },
  status: { observedGeneration: 3, ...status },
  ...extra,
});
const ready = (status: 'True' | 'False' | 'Unknown', reason: string, message = '') => [
  { type: 'Ready', status, reason, message },
];

describe('revisionIs', () => {
  it.each([
    [`main@sha1:${C}`, true],
    [`main/${C}`, true],
    [C, true],
    [`main@sha1:${C.slice(0, 12)}`, true],
    [`main@sha1:${OTHER}`, false],
    [`main@sha256:${C}`, false],
    ['', false],
  ])('%s names the commit: %s', (rev, want) => expect(revisionIs(rev, C)).toBe(want));
});

describe('kustomizationVerdict', () => {
  it('applied when the last applied revision is the commit and Ready is not False', () => {
    const v = kustomizationVerdict(
      ks({ lastAppliedRevision: `main@sha1:${C}`, conditions: ready('True', 'ReconciliationSucceeded') }),
      'flux-system/web',
      C,
    );
    expect(v).toEqual({ state: 'Applied', message: `Kustomization flux-system/web applied commit ${C.slice(0, 12)}` });
  });

  it('fails with Flux’s reason when Flux attempted the commit and Ready is False', () => {
    const v = kustomizationVerdict(
      ks({
        lastAppliedRevision: `main@sha1:${OTHER}`,
        lastAttemptedRevision: `main@sha1:${C}`,
        conditions: ready(
          'False',
          'ReconciliationFailed',
          'Deployment/shop/web dry-run failed: selector does not match',
        ),
      }),
      'flux-system/web',
      C,
    );
    expect(v).toEqual({
      state: 'Failed',
      reason: 'ReconciliationFailed',
      message: `Kustomization flux-system/web ReconciliationFailed for commit ${C.slice(0, 12)}: Deployment/shop/web dry-run failed: selector does not match`,
    });
  });

  it('keeps waiting while Flux has not attempted the commit, is still progressing, or has not observed its spec', () => {
    const waiting = [
      kustomizationVerdict(undefined, 'flux-system/web', C),
      kustomizationVerdict(ks({ lastAppliedRevision: `main@sha1:${OTHER}` }), 'flux-system/web', C),
      kustomizationVerdict(
        ks({ lastAttemptedRevision: `main@sha1:${C}`, conditions: ready('False', 'DependencyNotReady') }),
        'flux-system/web',
        C,
      ),
      kustomizationVerdict(
        ks({ lastAttemptedRevision: `main@sha1:${C}`, conditions: ready('Unknown', 'Progressing') }),
        'flux-system/web',
        C,
      ),
      kustomizationVerdict(
        ks(
          { observedGeneration: 2, lastAttemptedRevision: `main@sha1:${C}`, conditions: ready('False', 'BuildFailed') },
          { metadata: { name: 'web', generation: 3 } },
        ),
        'flux-system/web',
        C,
      ),
    ];
    expect(waiting.map((v) => v.state)).toEqual([
      'Progressing',
      'Progressing',
      'Progressing',
      'Progressing',
      'Progressing',
    ]);
    expect(waiting[0].message).toBe('waiting for Kustomization flux-system/web (not found)');
    expect(waiting[1].message).toBe(
      `waiting for Kustomization flux-system/web to apply commit ${C.slice(0, 12)} (last applied main@sha1:${OTHER})`,
    );
  });

  it('Ready at another revision (a later commit, e.g. kpromo’s own commit for another app): the workloads decide', () => {
    const v = kustomizationVerdict(
      ks({
        lastAppliedRevision: `main@sha1:${OTHER}`,
        lastAttemptedRevision: `main@sha1:${OTHER}`,
        conditions: ready('True', 'ReconciliationSucceeded'),
      }),
      'flux-system/web',
      C,
    );
    expect(v).toEqual({
      state: 'Applied',
      message: `Kustomization flux-system/web is Ready at main@sha1:${OTHER} (not commit ${C.slice(0, 12)} itself); judging the workloads`,
    });
  });

  it('a suspended Kustomization never applies: says so and keeps waiting (bounded by the rollout timeout)', () => {
    const v = kustomizationVerdict(ks({}, { spec: { suspend: true } }), 'flux-system/web', C);
    expect(v).toEqual({
      state: 'Progressing',
      message: `Kustomization flux-system/web is suspended; commit ${C.slice(0, 12)} is not applied`,
    });
  });
});
