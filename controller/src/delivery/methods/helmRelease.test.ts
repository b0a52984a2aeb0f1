import type { Application, Environment } from '@kpromo/api';
import { app, env } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { FakeKube } from '../../../test/support/fakeKube.js';
import type { AdoptedContainer, FoundEnvironment } from '../../extension/adoption.js';
import type { DiagnoseContext } from '../../extension/deliveryMethod.js';
import { HELMRELEASE, resourcePath } from '../../kube/paths.js';
import { KubeError, type KubeRest } from '../../kube/rest.js';
import { findValuePath, helmReleaseDelivery } from './helmRelease.js';

const prod = env('prod', {
  delivery: { method: 'helmRelease', helmRelease: { name: '{app}' } } as Environment['spec']['delivery'],
});
const diagnose = (apps: Application[], cluster: KubeRest | undefined) =>
  helmReleaseDelivery.diagnose!({
    env: prod,
    apps,
    stages: [],
    control: new FakeKube('control').rest,
    client: () => cluster,
  } satisfies DiagnoseContext);
const hr = (name: string, ready?: { status: string; message?: string }) => ({
  metadata: { name, namespace: 'app-prod' },
  ...(ready ? { status: { conditions: [{ type: 'Ready', ...ready }] } } : {}),
});
const SUBJECT = 'Environment prod HelmReleases';

describe('delivery.method helmRelease', () => {
  it("accessNeeds: patch on HelmReleases in the Environment's namespace", () => {
    expect(helmReleaseDelivery.accessNeeds!({ env: prod, workloadKinds: [] })).toEqual([
      { verb: 'patch', group: 'helm.toolkit.fluxcd.io', resource: 'helmreleases', namespace: 'app-prod' },
    ]);
  });

  it("diagnose: each Application's HelmRelease exists in the Environment's namespace and is Ready", async () => {
    const cluster = new FakeKube('prod');
    const apps = [app('cart'), app('web')];
    cluster.seed(resourcePath(HELMRELEASE, 'app-prod', 'cart'), hr('cart', { status: 'True' }));
    expect(await diagnose(apps, cluster.rest)).toEqual([
      {
        status: 'fail',
        subject: SUBJECT,
        message: 'missing: app-prod/web (web)',
        fix: 'create them, or fix delivery.helmRelease.name (templates {app} and {environment}) of Environment prod',
      },
    ]);
    cluster.seed(
      resourcePath(HELMRELEASE, 'app-prod', 'web'),
      hr('web', { status: 'False', message: 'install failed' }),
    );
    expect(await diagnose(apps, cluster.rest)).toEqual([
      {
        status: 'warn',
        subject: SUBJECT,
        message: 'not Ready: app-prod/web: install failed',
        fix: 'flux get all -A shows why; a promotion waits for Flux to apply it',
      },
    ]);
    cluster.seed(resourcePath(HELMRELEASE, 'app-prod', 'web'), hr('web'));
    expect(await diagnose(apps, cluster.rest)).toEqual([
      { status: 'pass', subject: SUBJECT, message: '2 found: cart, web' },
    ]);
    expect(await diagnose([], cluster.rest)).toEqual([
      { status: 'pass', subject: SUBJECT, message: 'no Applications deliver here yet' },
    ]);
  });

  it('diagnose: warns when your kubeconfig cannot reach the cluster, fails when Flux is not installed there', async () => {
    expect(await diagnose([app('cart')], undefined)).toEqual([
      {
        status: 'warn',
        subject: SUBJECT,
        message:
          'context prod is not in your kubeconfig: the HelmReleases can only be checked where the controller runs',
      },
    ]);
    const noCrd = {
      getOrUndefined: async (path: string) => {
        throw new KubeError(404, 'NotFound', 'GET', path, 'prod', 'the server could not find the requested resource');
      },
    } as unknown as KubeRest;
    expect(await diagnose([app('cart')], noCrd)).toEqual([
      {
        status: 'fail',
        subject: SUBJECT,
        message: 'helmreleases.helm.toolkit.fluxcd.io is not served in that cluster: Flux is not installed there',
        fix: 'install Flux in that cluster (flux install), or change delivery.method',
      },
    ]);
  });

  describe('infer', () => {
    const found = (helmReleases: FoundEnvironment['helmReleases']) =>
      ({ name: 'prod', helmReleases }) as unknown as FoundEnvironment;
    const container = (application: string, release: string | undefined, tag?: string, digest?: string) =>
      ({
        workload: { labels: release ? { 'helm.toolkit.fluxcd.io/name': release } : {} },
        host: 'reg.example.com',
        repository: `shop/${application}`,
        tag,
        digest,
        application,
      }) as unknown as AdoptedContainer;

    it('recognises workloads helm-controller renders (its label), as what manages them', () => {
      expect(helmReleaseDelivery.infer).toMatchObject({ evidence: 'manages', by: 'Flux HelmReleases' });
      expect(helmReleaseDelivery.infer!.recognises(container('cart', 'cart'), found([]))).toBe(true);
      expect(helmReleaseDelivery.infer!.recognises(container('cart', undefined), found([]))).toBe(false);
    });

    it('proposes the values paths that hold the running tag and digest, and leaves other names to review', () => {
      const values = { image: { repository: 'x', tag: 'v1', digest: 'sha256:d' } };
      const releases = [
        { name: 'cart', values },
        { name: 'web', values },
      ];
      const both = [container('cart', 'cart', 'v1', 'sha256:d'), container('web', 'web', 'v1', 'sha256:d')];
      expect(helmReleaseDelivery.infer!.propose({ found: found(releases), containers: both })).toEqual({
        delivery: {
          method: 'helmRelease',
          helmRelease: { name: '{app}', valuesPath: 'image.tag', digestPath: 'image.digest' },
        },
        undecided: [],
        incomplete: false,
      });
      // Named otherwise, and no values path holds the tag it runs.
      const other = [container('cart', 'shop-cart', 'v2')];
      expect(helmReleaseDelivery.infer!.propose({ found: found(releases), containers: other })).toEqual({
        delivery: { method: 'helmRelease', helmRelease: { name: '{app}', valuesPath: 'image.tag' } },
        undecided: [
          'HelmRelease names differ from the Application names: set delivery.helmRelease.name (a {app} template)',
          "no values path holds the running tag in the HelmReleases' spec.values: set delivery.helmRelease.valuesPath",
        ],
        incomplete: true,
      });
    });
  });
});

describe('findValuePath', () => {
  it('finds the shallowest path holding the value, and ignores keys a dot path cannot spell', () => {
    expect(findValuePath({ a: { tag: 'v1' }, image: { tag: 'v1' } }, 'v1')).toBe('a.tag');
    expect(findValuePath({ deep: { er: { tag: 'v1' } }, image: { tag: 'v1' } }, 'v1')).toBe('image.tag');
    expect(findValuePath({ 'a.b': 'v1' }, 'v1')).toBeUndefined();
    expect(findValuePath('v1', 'v1')).toBeUndefined();
  });
});
