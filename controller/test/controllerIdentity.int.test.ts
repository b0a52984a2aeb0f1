// The controller is recognised by who it is, not by a verb a wildcard grants (issue 48, item 9).
// RBAC's verbs: ["*"] matches kpromo's custom verbs, so a namespace admin's wildcard Role holds
// every verb there is. Such an admin attacks the controller-only writes with kubectl, as a real
// ServiceAccount identity (TokenRequest), on the real control plane with the admission policies of
// examples/deploy/admission-policy.yaml installed (applyCrds: their controller identity parameter
// names the harness admin, the identity the test controllers run as). Every attack is refused with
// a message saying why, and the object is unchanged afterwards.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  applyCrds,
  CONTROLLER_IDENTITY,
  HARNESS_CONTROLLER_USER,
  kubeConfigFor,
  needComponents,
} from '@kpromo/test-harness';
import {
  deleteNs,
  ensureNs,
  getPlan,
  grantRole,
  type KubectlRun,
  kubectl,
  restFor,
  serviceAccountKubeconfig,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { HISTORY_LABEL } from '../src/history/segments.js';

await needComponents('kubectl');

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `cid-${RUN}`;
const kubeconfig = inject('kubeconfig');
const dev = restFor(kubeconfig, 'dev');
const GROUP = 'promotions.kpromo.dev';
const PLANS = `promotionplans.${GROUP}`;
const base = `/apis/${GROUP}/v1alpha1/namespaces/${NS}`;
const HISTORY = 'history-stable-2026-01';
const historyPath = `/api/v1/namespaces/${NS}/configmaps/${HISTORY}`;
const identityPath = `/api/v1/namespaces/${CONTROLLER_IDENTITY.namespace}/configmaps/${CONTROLLER_IDENTITY.name}`;
/** The attacker's Role in the controller's own namespace (removed afterwards: that namespace is shared). */
const KPROMO_NS_ROLE = `cid-${RUN}-admin`;

/** The namespace admin: a ServiceAccount of NS, bound to a Role granting every verb on every resource there. */
const SA = 'ns-admin';
const attacker = { token: '', username: `system:serviceaccount:${NS}:${SA}` };
let attackerKubeconfig = '';
const everything = [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }];

const as = (...args: string[]) => kubectl(attackerKubeconfig, ...args);
/** `kubectl create -f` of `obj` as the attacker. */
function createAs(obj: object): Promise<KubectlRun> {
  const path = join(mkdtempSync(join(tmpdir(), 'kpromo-cid-')), 'obj.yaml');
  writeFileSync(path, stringify(obj));
  return as('create', '-f', path);
}

/** A refusal by admission: kubectl failed and the apiserver's message says `says`. */
function refused(r: KubectlRun, ...says: string[]) {
  expect(r.code, `the apiserver accepted: ${r.stdout}`).not.toBe(0);
  for (const s of says) expect(r.stderr).toContain(s);
}

const plan = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: `${GROUP}/v1alpha1`,
  kind: 'PromotionPlan',
  metadata: { name, namespace: NS },
  spec: { flow: 'main', from: 'dev', to: 'stable', candidates: [], ...spec },
});

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, NS);
  attackerKubeconfig = await serviceAccountKubeconfig(kubeconfig, NS, SA);
  await grantRole(dev, NS, 'ns-admin', everything, [attacker]);
  await grantRole(dev, CONTROLLER_IDENTITY.namespace, KPROMO_NS_ROLE, everything, [attacker]);
  // What the controller wrote (the harness admin is the controller identity here): a plan and a
  // month of release history.
  await dev.create(`${base}/promotionplans`, plan('target'));
  await dev.create(`/api/v1/namespaces/${NS}/configmaps`, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: HISTORY, namespace: NS, labels: { [HISTORY_LABEL]: 'true' } },
    data: { entry: '{"application":"web","result":"Succeeded"}' },
  });
});

afterAll(async () => {
  const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${CONTROLLER_IDENTITY.namespace}`;
  await dev.delete(`${rbac}/rolebindings/${KPROMO_NS_ROLE}`).catch(() => undefined);
  await dev.delete(`${rbac}/roles/${KPROMO_NS_ROLE}`).catch(() => undefined);
  await deleteNs(dev, NS);
});

describe('a namespace admin whose Role grants verbs ["*"] is not the controller', () => {
  it('holds automate, approve and patch on plans and on their status through the wildcard (the premise: no verb tells the controller apart)', async () => {
    for (const verb of ['automate', 'approve', 'patch'])
      expect((await as('auth', 'can-i', verb, PLANS, '-n', NS)).stdout.trim(), verb).toBe('yes');
    expect((await as('auth', 'can-i', 'patch', `${PLANS}/status`, '-n', NS)).stdout.trim()).toBe('yes');
  });

  it('attack: kubectl label a plan promotions.kpromo.dev/auto (and rollback-of-uid), to run it without approval: refused, no label', async () => {
    refused(
      await as('label', PLANS, 'target', '-n', NS, `${GROUP}/auto=true`),
      'only the controller labels plans promotions.kpromo.dev/auto',
      `${attacker.username} is not the kpromo controller`,
    );
    refused(
      await as('label', PLANS, 'target', '-n', NS, `${GROUP}/rollback-of-uid=some-uid`),
      'only the controller labels plans promotions.kpromo.dev/auto',
    );
    // Nor at creation.
    refused(
      await createAs({
        ...plan('auto-born'),
        metadata: { name: 'auto-born', namespace: NS, labels: { [`${GROUP}/auto`]: 'true' } },
      }),
      'only the controller labels plans promotions.kpromo.dev/auto',
    );
    const p = await getPlan(dev, NS, 'target');
    expect(p.metadata.labels ?? {}).toEqual({});
    expect(await dev.getOrUndefined(`${base}/promotionplans/auto-born`)).toBeUndefined();
  });

  it('attack: kubectl patch --subresource=status of a plan (the journal the gate and rollbacks read): refused, status unchanged', async () => {
    const before = await getPlan(dev, NS, 'target');
    refused(
      await as(
        'patch',
        PLANS,
        'target',
        '-n',
        NS,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { phase: 'Complete' } }),
      ),
      'only the kpromo controller writes the status of promotionplans',
      `${attacker.username} is not the kpromo controller`,
    );
    expect((await getPlan(dev, NS, 'target')).status).toEqual(before.status);
  });

  it('attack: kubectl patch an approval naming another user (rita) onto a plan: refused, no approval', async () => {
    const uid = (await getPlan(dev, NS, 'target')).metadata.uid;
    refused(
      await as(
        'patch',
        PLANS,
        'target',
        '-n',
        NS,
        '--type=json',
        '-p',
        JSON.stringify([{ op: 'add', path: '/spec/approvals', value: [{ user: 'rita', planUID: uid }] }]),
      ),
      `an approval must name the requesting user ${attacker.username}`,
    );
    // Nor a plan "requested by" someone else, nor a LineStop in someone else's name.
    refused(
      await createAs(plan('forged-request', { requestedBy: 'rita' })),
      `spec.requestedBy must be the creating user ${attacker.username}`,
    );
    refused(
      await createAs({
        apiVersion: `${GROUP}/v1alpha1`,
        kind: 'LineStop',
        metadata: { name: 'forged-stop', namespace: NS },
        spec: { reason: 'x', stoppedBy: 'rita' },
      }),
      'spec.stoppedBy must be your own user name',
    );
    expect((await getPlan(dev, NS, 'target')).spec.approvals ?? []).toEqual([]);
    expect(await dev.getOrUndefined(`${base}/promotionplans/forged-request`)).toBeUndefined();
    expect(await dev.getOrUndefined(`${base}/linestops/forged-stop`)).toBeUndefined();
  });

  it('attack: kubectl rewrite, unlabel and delete the release history: refused, history unchanged', async () => {
    const before = await dev.get<{ data?: Record<string, string> }>(historyPath);
    const says = [
      'only the kpromo controller writes release history',
      `${attacker.username} is not the kpromo controller`,
    ];
    refused(
      await as(
        'patch',
        'configmap',
        HISTORY,
        '-n',
        NS,
        '--type=merge',
        '-p',
        JSON.stringify({ data: { entry: '{}' } }),
      ),
      ...says,
    );
    refused(await as('label', 'configmap', HISTORY, '-n', NS, `${HISTORY_LABEL}-`), ...says);
    refused(await as('delete', 'configmap', HISTORY, '-n', NS), ...says);
    refused(
      await createAs({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'history-stable-2026-02', namespace: NS, labels: { [HISTORY_LABEL]: 'true' } },
        data: { entry: '{"application":"web","result":"Succeeded"}' },
      }),
      ...says,
    );
    expect((await dev.get<{ data?: Record<string, string> }>(historyPath)).data).toEqual(before.data);
  });

  it('attack: an admin of the controller’s namespace adds themselves to, unlabels or deletes the controller identity parameter: refused, unchanged', async () => {
    const before = await dev.get<{ metadata: { labels?: Record<string, string> }; data?: Record<string, string> }>(
      identityPath,
    );
    expect(Object.values(before.data ?? {})).toContain(HARNESS_CONTROLLER_USER);
    const cm = ['configmap', CONTROLLER_IDENTITY.name, '-n', CONTROLLER_IDENTITY.namespace];
    const says = `ConfigMap ${CONTROLLER_IDENTITY.namespace}/${CONTROLLER_IDENTITY.name} names the kpromo controller`;
    refused(
      await as('patch', ...cm, '--type=merge', '-p', JSON.stringify({ data: { mine: attacker.username } })),
      says,
    );
    refused(await as('label', ...cm, `${GROUP}/controller-identity-`), says);
    refused(await as('delete', ...cm), says);
    const after = await dev.get<typeof before>(identityPath);
    expect(after.data).toEqual(before.data);
    expect(after.metadata.labels).toEqual(before.metadata.labels);
  });
});
