import { env } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import {
  type ImagePolicy,
  imagePolicyTarget,
  imagePolicyVerdict,
  imageRepositoryProblem,
  sameImageName,
} from './imagePolicyVerdict.js';

// Status shapes as image-reflector-controller v1 (image.toolkit.fluxcd.io/v1) writes them:
// latestRef {name, tag, digest?}, observedPreviousRef, Ready/Stalled conditions.
const IMAGE = 'reg-prod.local:5000/prod/shop/web';
const TAG = 'v1.2.0-20260102T000000Z';
const DIGEST = `sha256:${'a'.repeat(64)}`;
const want = { image: IMAGE, tag: TAG, digest: DIGEST };
const REF = 'flux-system/web';

const policy = (status: ImagePolicy['status'], spec: ImagePolicy['spec'] = {}): ImagePolicy => ({
  metadata: { name: 'web', namespace: 'flux-system', generation: 2 },
  spec: { imageRepositoryRef: { name: 'web' }, policy: { semver: { range: '>=1.0.0-0' } }, ...spec },
  status: { observedGeneration: 2, ...status },
});
const cond = (type: string, status: string, reason: string, message = '') => ({ type, status, reason, message });

describe('imagePolicyVerdict', () => {
  it('applied once latestRef is the pushed tag and digest in the target repository', () => {
    expect(imagePolicyVerdict(policy({ latestRef: { name: IMAGE, tag: TAG, digest: DIGEST } }), REF, want)).toEqual({
      state: 'Applied',
      message: `ImagePolicy ${REF} selects ${TAG} (${DIGEST}); Flux image automation commits it, judging the workloads`,
    });
  });

  it('needs the digest reflected: fails when the policy never reflects it, waits while it may still', () => {
    const noDigest = { latestRef: { name: IMAGE, tag: TAG } };
    expect(imagePolicyVerdict(policy(noDigest), REF, want)).toEqual({
      state: 'Failed',
      reason: 'DigestNotReflected',
      message: `ImagePolicy ${REF} selects ${TAG} without its digest (spec.digestReflectionPolicy is Never), so the image Flux commits would not pin ${DIGEST}: set spec.digestReflectionPolicy to IfNotPresent`,
    });
    expect(imagePolicyVerdict(policy(noDigest, { digestReflectionPolicy: 'IfNotPresent' }), REF, want)).toEqual({
      state: 'Progressing',
      message: `waiting for ImagePolicy ${REF} to reflect the digest of ${TAG}`,
    });
  });

  it('fails when the selected tag carries another digest (the tag was pushed again)', () => {
    const v = imagePolicyVerdict(
      policy({ latestRef: { name: IMAGE, tag: TAG, digest: `sha256:${'b'.repeat(64)}` } }),
      REF,
      want,
    );
    expect(v).toMatchObject({ state: 'Failed', reason: 'DigestMismatch' });
    expect(v.message).toContain(`kpromo pushed ${TAG} as ${DIGEST}`);
  });

  it('progresses while the policy selects an older tag or nothing yet', () => {
    const older = imagePolicyVerdict(policy({ latestRef: { name: IMAGE, tag: 'v1.2.0-20260101T000000Z' } }), REF, want);
    expect(older).toEqual({
      state: 'Progressing',
      message: `waiting for ImagePolicy ${REF} to select ${TAG} (it selects v1.2.0-20260101T000000Z)`,
    });
    expect(imagePolicyVerdict(policy({}), REF, want)).toEqual({
      state: 'Progressing',
      message: `waiting for ImagePolicy ${REF} to select ${TAG} (it selects nothing yet)`,
    });
  });

  it("fails when another release ranks above kpromo's tag, or replaced it after it was selected", () => {
    const newer = imagePolicyVerdict(policy({ latestRef: { name: IMAGE, tag: 'v1.2.0-20260103T000000Z' } }), REF, want);
    expect(newer).toMatchObject({ state: 'Failed', reason: 'Superseded' });
    expect(newer.message).toBe(
      `ImagePolicy ${REF} selects v1.2.0-20260103T000000Z, which ranks above ${TAG} by its policy: a newer release won, and Flux will not deploy ${TAG}`,
    );
    // With filterTags.extract the order is unknown: only a replacement of kpromo's tag tells.
    const extract = { filterTags: { pattern: '^v.*-(?P<ts>.*)$', extract: '$ts' } };
    const unknown = imagePolicyVerdict(policy({ latestRef: { name: IMAGE, tag: 'zzz' } }, extract), REF, want);
    expect(unknown.state).toBe('Progressing');
    expect(unknown.message).toMatch(/kpromo cannot tell which ranks higher: its filterTags\.extract/);
    const replaced = imagePolicyVerdict(
      policy({ latestRef: { name: IMAGE, tag: 'zzz' }, observedPreviousRef: { name: IMAGE, tag: TAG } }, extract),
      REF,
      want,
    );
    expect(replaced).toMatchObject({ state: 'Failed', reason: 'Superseded' });
    expect(replaced.message).toContain(`selects zzz, which replaced ${TAG}`);
  });

  it("fails with Flux's reason when the policy stalls or cannot select for good, not for transient reasons", () => {
    const stalled = policy({
      conditions: [
        cond('Ready', 'False', 'InvalidPolicy', 'invalid range'),
        cond('Stalled', 'True', 'InvalidPolicy', 'invalid range'),
      ],
    });
    expect(imagePolicyVerdict(stalled, REF, want)).toEqual({
      state: 'Failed',
      reason: 'InvalidPolicy',
      message: `ImagePolicy ${REF} InvalidPolicy: invalid range`,
    });
    const denied = policy({ conditions: [cond('Ready', 'False', 'AccessDenied', 'cross-namespace ref')] });
    expect(imagePolicyVerdict(denied, REF, want)).toMatchObject({ state: 'Failed', reason: 'AccessDenied' });
    for (const reason of ['DependencyNotReady', 'Failure', 'ProgressingWithRetry'])
      expect(
        imagePolicyVerdict(policy({ conditions: [cond('Ready', 'False', reason)] }), REF, want).state,
        reason,
      ).toBe('Progressing');
    // A status from before the last spec change is not the policy's word on the current spec.
    const behind: ImagePolicy = { ...stalled, metadata: { ...stalled.metadata, generation: 3 } };
    expect(imagePolicyVerdict(behind, REF, want).state).toBe('Progressing');
  });

  it('fails when the policy selects from another repository, cannot rank the tag, or is gone', () => {
    expect(
      imagePolicyVerdict(policy({ latestRef: { name: 'reg-prod.local:5000/other', tag: 'x' } }), REF, want),
    ).toMatchObject({
      state: 'Failed',
      reason: 'ImagePolicyMismatch',
    });
    expect(imagePolicyVerdict(policy({}), REF, { ...want, tag: '20260102T000000Z-v1' })).toMatchObject({
      state: 'Failed',
      reason: 'TagNotSelectable',
    });
    expect(imagePolicyVerdict(undefined, REF, want)).toMatchObject({ state: 'Failed', reason: 'ImagePolicyNotFound' });
  });

  it('waits, saying so, while the policy is suspended', () => {
    expect(imagePolicyVerdict(policy({}, { suspend: true }), REF, want)).toEqual({
      state: 'Progressing',
      message: `ImagePolicy ${REF} is suspended; it does not select ${TAG}`,
    });
  });
});

describe('imagePolicyTarget (attacker-written Environment fields)', () => {
  const withCfg = (imagePolicy: object) => env('prod', { delivery: { method: 'imagePolicy', imagePolicy } });

  it('renders {app} and {environment} with defaults flux-system and the environment cluster', () => {
    expect(imagePolicyTarget(withCfg({}), 'web')).toEqual({
      namespace: 'flux-system',
      name: 'web',
      cluster: 'environment',
    });
    expect(
      imagePolicyTarget(withCfg({ name: '{app}-{environment}', namespace: 'images', cluster: 'control' }), 'web'),
    ).toEqual({
      namespace: 'images',
      name: 'web-prod',
      cluster: 'control',
    });
  });

  it.each([
    [{ name: '{app}/../../secrets' }, /delivery\.imagePolicy\.name .* not a Kubernetes object name/],
    [{ name: '{{app}}' }, /renders "\{web\}"/],
    [{ name: '{appx}' }, /only \{app\} and \{environment\} are replaced/],
    [{ name: 'A'.repeat(300) }, /not a Kubernetes object name/],
    [{ namespace: 'flux.system' }, /delivery\.imagePolicy\.namespace "flux.system" is not a Kubernetes namespace name/],
  ])('refuses %j', (cfg, problem) => {
    const t = imagePolicyTarget(withCfg(cfg), 'web');
    expect('problem' in t && t.problem).toMatch(problem);
  });
});

describe('imageRepositoryProblem', () => {
  const p = policy({});
  it('accepts an ImageRepository that scans the target repository (registry names compared as registries do)', () => {
    expect(
      imageRepositoryProblem(REF, p, { metadata: { name: 'web' }, spec: { image: IMAGE } }, IMAGE),
    ).toBeUndefined();
    expect(sameImageName('nginx', 'index.docker.io/library/nginx')).toBe(true);
    expect(sameImageName('REG.local/app', 'reg.local/app')).toBe(true);
    expect(sameImageName('reg.local/app', 'reg.local/App')).toBe(false);
  });

  it('names what is wrong: no ref, no ImageRepository, another image', () => {
    expect(imageRepositoryProblem(REF, policy({}, { imageRepositoryRef: undefined }), undefined, IMAGE)).toBe(
      `ImagePolicy ${REF} has no spec.imageRepositoryRef`,
    );
    expect(imageRepositoryProblem(REF, p, undefined, IMAGE)).toBe(
      `ImageRepository flux-system/web (the imageRepositoryRef of ImagePolicy ${REF}) not found; it must scan ${IMAGE}`,
    );
    expect(imageRepositoryProblem(REF, p, { metadata: { name: 'web' }, spec: { image: 'ghcr.io/x/web' } }, IMAGE)).toBe(
      `ImagePolicy ${REF} selects from ImageRepository flux-system/web, which scans ghcr.io/x/web, not ${IMAGE} where kpromo pushes this Application's tags`,
    );
  });
});
