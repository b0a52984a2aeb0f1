import { app, dg, env } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { PLAN_ANNOTATION, patchWorkloadImage, UnpatchableWorkloadError } from '../src/delivery/patchWorkload.js';
import { defineWorkloadKind } from '../src/extension/workloadKind.js';
import { KubeError, type KubeRest, type RequestOptions } from '../src/kube/rest.js';
import { loadPlugins } from '../src/reconcile/plugins.js';
import { builtinWorkloadKinds } from '../src/rollout/registry.js';

const NS = '/namespaces/app-stable';
const IMAGE = `reg-stable.local:5000/shop/cart:v2@${dg('a')}`;

/** A workload cluster as far as patch delivery uses it: objects by path, every request recorded. */
function cluster(objects: Record<string, Record<string, unknown>>) {
  const calls: Array<{ method: string; path: string; contentType?: string; body?: unknown }> = [];
  let uid = 0;
  const notFound = (method: string, path: string) =>
    new KubeError(404, 'NotFound', method, path, 'stable', 'not found');
  const rest = {
    clusterName: 'stable',
    async getOrUndefined(path: string) {
      return objects[path] ? structuredClone(objects[path]) : undefined;
    },
    async request(method: string, path: string, opts: RequestOptions = {}) {
      calls.push({ method, path, contentType: opts.contentType, body: structuredClone(opts.body) });
      if (method === 'DELETE') {
        if (!objects[path]) throw notFound(method, path);
        delete objects[path];
        return {};
      }
      if (method === 'POST') {
        const o = structuredClone(opts.body) as { metadata: { name: string; uid?: string } };
        o.metadata.uid = `new-${++uid}`;
        objects[`${path}/${o.metadata.name}`] = o;
        return o;
      }
      if (!objects[path]) throw notFound(method, path);
      return objects[path];
    },
  } as unknown as KubeRest;
  return { rest, calls };
}

const containers = (image: string) => [
  { name: 'sidecar', image: 'envoy:1' },
  { name: 'main', image },
];

describe('patchWorkloadImage: where each kind keeps its image, and how it is written', () => {
  it('CronJob: a strategic merge of the job template', async () => {
    const path = `/apis/batch/v1${NS}/cronjobs/report`;
    const { rest, calls } = cluster({
      [path]: {
        metadata: { name: 'report' },
        spec: { jobTemplate: { spec: { template: { spec: { containers: containers('old') } } } } },
      },
    });
    const a = app('report', { workloads: [{ kind: 'CronJob', name: 'report', container: 'main' }] });
    expect(await patchWorkloadImage(rest, env('stable'), a, IMAGE, 'ns/p1', builtinWorkloadKinds)).toEqual([
      'CronJob/report',
    ]);
    expect(calls).toEqual([
      {
        method: 'PATCH',
        path,
        contentType: 'application/strategic-merge-patch+json',
        body: {
          metadata: { annotations: { [PLAN_ANNOTATION]: 'ns/p1' } },
          spec: { jobTemplate: { spec: { template: { spec: { containers: [{ name: 'main', image: IMAGE }] } } } } },
        },
      },
    ]);
  });

  it('DaemonSet: a strategic merge of the first container when none is named', async () => {
    const path = `/apis/apps/v1${NS}/daemonsets/agent`;
    const { rest, calls } = cluster({
      [path]: { metadata: { name: 'agent' }, spec: { template: { spec: { containers: containers('old') } } } },
    });
    await patchWorkloadImage(
      rest,
      env('stable'),
      app('agent', { workloads: [{ kind: 'DaemonSet', name: 'agent' }] }),
      IMAGE,
      'ns/p1',
      builtinWorkloadKinds,
    );
    expect(calls.at(-1)?.body).toMatchObject({
      spec: { template: { spec: { containers: [{ name: 'sidecar', image: IMAGE }] } } },
    });
  });

  it('Rollout (a custom resource): a JSON patch of the image by index, guarded by the name', async () => {
    const path = `/apis/argoproj.io/v1alpha1${NS}/rollouts/cart`;
    const { rest, calls } = cluster({
      [path]: { metadata: { name: 'cart' }, spec: { template: { spec: { containers: containers('old') } } } },
    });
    const a = app('cart', { workloads: [{ kind: 'Rollout', name: 'cart', container: 'main' }] });
    await patchWorkloadImage(rest, env('stable'), a, IMAGE, 'ns/p1', builtinWorkloadKinds);
    expect(calls).toEqual([
      {
        method: 'PATCH',
        path,
        contentType: 'application/json-patch+json',
        body: [
          { op: 'test', path: '/spec/template/spec/containers/1/name', value: 'main' },
          { op: 'replace', path: '/spec/template/spec/containers/1/image', value: IMAGE },
        ],
      },
      {
        method: 'PATCH',
        path,
        contentType: 'application/merge-patch+json',
        body: { metadata: { annotations: { [PLAN_ANNOTATION]: 'ns/p1' } } },
      },
    ]);
  });

  it('Job (immutable template): deleted and created again with the new image, generated fields dropped', async () => {
    const path = `/apis/batch/v1${NS}/jobs/migrate`;
    const generated = {
      'controller-uid': 'u1',
      'batch.kubernetes.io/controller-uid': 'u1',
      'job-name': 'migrate',
      'batch.kubernetes.io/job-name': 'migrate',
    };
    const { rest, calls } = cluster({
      [path]: {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: {
          name: 'migrate',
          namespace: 'app-stable',
          uid: 'u1',
          resourceVersion: '7',
          creationTimestamp: 't',
          labels: { team: 'a' },
          managedFields: [{}],
        },
        spec: {
          backoffLimit: 1,
          selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': 'u1' } },
          template: {
            metadata: { labels: { app: 'migrate', ...generated } },
            spec: { restartPolicy: 'Never', containers: containers('old') },
          },
        },
        status: { succeeded: 1 },
      },
    });
    const a = app('migrate', { workloads: [{ kind: 'Job', name: 'migrate', container: 'main' }] });
    await patchWorkloadImage(rest, env('stable'), a, IMAGE, 'ns/p1', builtinWorkloadKinds);
    expect(calls.map((c) => c.method)).toEqual(['DELETE', 'POST']);
    expect(calls[0].body).toEqual({
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      propagationPolicy: 'Background',
      preconditions: { uid: 'u1' },
    });
    expect(calls[1]).toMatchObject({ path: `/apis/batch/v1${NS}/jobs` });
    expect(calls[1].body).toEqual({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: 'migrate',
        namespace: 'app-stable',
        labels: { team: 'a' },
        annotations: { [PLAN_ANNOTATION]: 'ns/p1' },
      },
      spec: {
        backoffLimit: 1,
        template: {
          metadata: { labels: { app: 'migrate' } },
          spec: {
            restartPolicy: 'Never',
            containers: [
              { name: 'sidecar', image: 'envoy:1' },
              { name: 'main', image: IMAGE },
            ],
          },
        },
      },
    });

    // Again (the step runner retries until it succeeded once): the Job already runs the image.
    calls.length = 0;
    await patchWorkloadImage(rest, env('stable'), a, IMAGE, 'ns/p1', builtinWorkloadKinds);
    expect(calls).toEqual([]);
  });

  it('refuses a kind it cannot patch before patching anything, naming the ones it can', async () => {
    const { rest, calls } = cluster({});
    const webService = defineWorkloadKind({
      kind: 'WebService',
      resource: { group: 'serving.example.com', version: 'v1', plural: 'webservices', kind: 'WebService' },
      ready: () => ({ ready: true, message: '' }),
    });
    const a = app('cart', {
      workloads: [
        { kind: 'Deployment', name: 'cart' },
        { kind: 'WebService' as 'Deployment', name: 'cart' },
      ],
    });
    const kinds = loadPlugins([{ name: 'x', workloadKinds: [webService] }]).workloadKinds;
    const err = await patchWorkloadImage(rest, env('stable'), a, IMAGE, 'ns/p1', kinds).catch((e) => e);
    expect(err).toBeInstanceOf(UnpatchableWorkloadError);
    expect(err.message).toBe(
      'WebService cart: delivery.method patch updates Deployment, StatefulSet, DaemonSet, Rollout, CronJob, Job only; use a delivery method that handles WebService (Environment stable)',
    );
    expect(calls).toEqual([]);
  });
});
