import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GROUP, KINDS, RESOURCES, VERSION } from '@kpromo/api';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from './cluster/paths.js';
import { kubeConfigFor, waitFor } from './kube.js';
import {
  applyCrds,
  applyManifest,
  deleteNamespace,
  ensureNamespace,
  loadYaml,
  loadYamlDir,
  type Manifest,
} from './manifests.js';

const NS = 'found-samples';
const samples = loadYamlDir(join(REPO_ROOT, 'examples/samples'));
const invalid = loadYamlDir(join(REPO_ROOT, 'examples/invalid')).map((f) => ({
  ...f,
  // First comment line = the expected fragment of the server's validation message.
  expect: loadRawFirstComment(join(REPO_ROOT, 'examples/invalid', f.file)),
}));

function loadRawFirstComment(path: string): string {
  const first = loadYamlText(path).split('\n')[0];
  return first.replace(/^#\s*/, '');
}
function loadYamlText(path: string): string {
  return readFileSync(path, 'utf8');
}

/** The apiserver's Status.message of a failed request. */
function serverMessage(err: unknown): string {
  const body = (err as { body?: unknown } | undefined)?.body;
  try {
    return (JSON.parse(String(body)) as { message: string }).message;
  } catch {
    return String(body);
  }
}

function plural(kind: string): string {
  return RESOURCES[kind as keyof typeof RESOURCES].plural;
}

describe('CRDs and example resources on a real kube-apiserver', () => {
  let kc: k8s.KubeConfig;
  let custom: k8s.CustomObjectsApi;

  beforeAll(async () => {
    expect(inject('clusters')).toEqual(expect.arrayContaining(['dev', 'stable', 'prod']));
    kc = kubeConfigFor('dev', inject('kubeconfig'));
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await applyCrds(kc);
    await ensureNamespace(kc, NS);
  });
  afterAll(async () => {
    await deleteNamespace(kc, NS);
  });

  it('serves every kind with short names, categories and the status subresource', async () => {
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    for (const kind of KINDS) {
      const crd = await ext.readCustomResourceDefinition({ name: `${plural(kind)}.${GROUP}` });
      expect(crd.spec.names.shortNames).toEqual(RESOURCES[kind].shortNames);
      expect(crd.spec.names.categories).toContain('kpromo');
      expect(crd.spec.versions[0].subresources?.status).toBeDefined();
      expect(crd.status?.acceptedNames?.kind).toBe(kind);
    }
  });

  it.each(samples.map((s) => [s.file, s.docs] as const))('accepts examples/samples/%s', async (_file, docs) => {
    for (const doc of docs) {
      const obj = { ...doc, metadata: { ...doc.metadata, namespace: NS } } as Manifest;
      const applied = await applyManifest(kc, obj);
      expect(applied.metadata?.uid).toBeTruthy();
      expect(applied.metadata?.generation).toBe(1);
    }
  });

  it('applies schema defaults on the server', async () => {
    const flow = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NS,
      plural: 'promotionflows',
      name: 'shop',
    })) as { spec: { concurrency: number; approval: string } };
    expect(flow.spec.concurrency).toBe(4);
    const plan = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NS,
      plural: 'promotionplans',
      name: 'shop-stable-to-prod',
    })) as { spec: { action: string } };
    expect(plan.spec.action).toBe('promote');
    const app = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NS,
      plural: 'applications',
      name: 'cart',
    })) as { spec: { type: string } };
    expect(app.spec.type).toBe('service');
  });

  it.each(invalid.map((f) => [f.file, f.docs[0], f.expect] as const))(
    'rejects examples/invalid/%s with the server validation message',
    async (_file, doc, expected) => {
      const obj = { ...doc, metadata: { ...doc.metadata, namespace: NS } } as Manifest;
      const err = await applyManifest(kc, obj).then(
        () => undefined,
        (e: unknown) => e as { code?: number; body?: unknown },
      );
      expect(err, 'the apiserver accepted an invalid resource').toBeDefined();
      expect(err?.code).toBe(422);
      expect(serverMessage(err)).toContain(expected);
    },
  );

  it('fixes the content of a plan at creation and keeps approvals append-only (CEL transition rules)', async () => {
    const [plan] = loadYaml(join(REPO_ROOT, 'examples/samples/plan.yaml'));
    const base = { ...plan, metadata: { name: 'immutable-check', namespace: NS } } as Manifest & {
      spec: Record<string, unknown>;
    };
    // The admin kubeconfig's user is kpromo-admin (system:masters holds every verb).
    const approvals = [{ user: 'kpromo-admin' }];
    await applyManifest(kc, { ...base, spec: { ...base.spec, approvals } });
    const rejected = async (spec: Record<string, unknown>) => {
      const err = await applyManifest(kc, { ...base, spec }).catch((e: unknown) => e as { code?: number });
      expect((err as { code?: number } | undefined)?.code, JSON.stringify(spec)).toBe(422);
      return serverMessage(err);
    };
    const other = { application: 'cart', from: { tag: 'v9.9.9', digest: `sha256:${'c'.repeat(64)}` } };
    const frozen =
      'the content of a plan (flow, from, to, action, rollbackOf, applications, candidates, requestedBy, requestedByAgent) is fixed at creation';
    expect(await rejected({ ...base.spec, approvals, candidates: [other] })).toContain(frozen);
    expect(await rejected({ ...base.spec, approvals, to: 'dev' })).toContain(frozen);
    expect(await rejected({ ...base.spec, approvals, action: 'rollback', rollbackOf: 'x' })).toContain(frozen);
    expect(await rejected({ ...base.spec, approvals: [] })).toContain('approvals can only be appended');
    // Unapproved plans too: nothing retargets a pending or automatic plan.
    const pending = { ...base, metadata: { name: 'immutable-pending', namespace: NS } };
    await applyManifest(kc, pending);
    const err = await applyManifest(kc, { ...pending, spec: { ...base.spec, to: 'dev' } }).catch((e: unknown) => e);
    expect(serverMessage(err)).toContain(frozen);
    expect(await rejected({ ...base.spec, approvals: [{ user: 'kpromo-admin', comment: 'edited' }] })).toContain(
      'approvals can only be appended',
    );
  });

  it('writes status only through the status subresource and keeps observedGeneration', async () => {
    const name = 'checkout';
    const status = {
      observedGeneration: 1,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Observed',
          message: 'seen in dev',
          lastTransitionTime: '2026-12-02T10:15:00Z',
          observedGeneration: 1,
        },
      ],
    };
    await custom.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace: NS, plural: 'applications', name, body: { status } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const app = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NS,
      plural: 'applications',
      name,
    })) as { status: typeof status; metadata: { generation: number } };
    expect(app.status.conditions[0].reason).toBe('Observed');
    expect(app.metadata.generation).toBe(1);
    // A status field sent to the main resource is dropped (status is a subresource).
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: NS,
        plural: 'applications',
        name,
        body: { status: { observedGeneration: 99 } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const again = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NS,
      plural: 'applications',
      name,
    })) as { status: typeof status };
    expect(again.status.observedGeneration).toBe(1);
  });

  it('prints the declared printer columns (kubectl table format)', async () => {
    const cluster = kc.getCurrentCluster();
    const opts: Record<string, unknown> = {};
    await kc.applyToHTTPSOptions(opts as never);
    const { request } = await import('node:https');
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        `${cluster?.server}/apis/${GROUP}/${VERSION}/namespaces/${NS}/promotionplans`,
        { ...opts, headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } },
        (res) => {
          let b = '';
          res.on('data', (d) => (b += d));
          res.on('end', () => resolve(b));
        },
      );
      req.on('error', reject);
      req.end();
    });
    const table = JSON.parse(body) as { kind: string; columnDefinitions: Array<{ name: string }> };
    expect(table.kind).toBe('Table');
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(
      expect.arrayContaining(['Name', 'Flow', 'From', 'To', 'Approved', 'Phase']),
    );
  });

  it('enforces RBAC: an unprivileged service account may not list applications', async () => {
    const authz = kc.makeApiClient(k8s.AuthorizationV1Api);
    const review = await authz.createSubjectAccessReview({
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: `system:serviceaccount:${NS}:nobody`,
          resourceAttributes: { group: GROUP, resource: 'applications', verb: 'list', namespace: NS },
        },
      },
    });
    expect(review.status?.allowed).toBe(false);
  });
});

describe('workloads on the local clusters', () => {
  it.each(['dev', 'stable', 'prod'])('a Deployment in %s becomes Ready through kwok', async (context) => {
    const kc = kubeConfigFor(context, inject('kubeconfig'));
    const ns = `found-rollout-${context}`;
    await ensureNamespace(kc, ns);
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    try {
      await applyManifest(kc, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: ns },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'app', image: 'registry.local/web:v1.0.0' }] },
          },
        },
      } as k8s.V1Deployment);
      const ready = await waitFor(
        `Deployment ${ns}/web Ready in ${context}`,
        async () => {
          const d = await apps.readNamespacedDeployment({ name: 'web', namespace: ns });
          return d.status?.readyReplicas === 2 && d.status.updatedReplicas === 2 ? d : undefined;
        },
        90_000,
      );
      expect(ready.status?.availableReplicas).toBe(2);
      const pods = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: ns, labelSelector: 'app=web' });
      expect(pods.items.every((p) => p.spec?.nodeName === `kwok-${context}-0` && p.status?.phase === 'Running')).toBe(
        true,
      );
    } finally {
      await deleteNamespace(kc, ns);
    }
  });
});
