import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import { REPO_ROOT } from './cluster/paths.js';
import { waitFor } from './kube.js';

export type Manifest = k8s.KubernetesObject & Record<string, unknown>;

/** Every YAML document of one file (empty documents dropped). */
export function loadYaml(path: string): Manifest[] {
  return parseAllDocuments(readFileSync(path, 'utf8'))
    .map((d) => d.toJS() as Manifest | null)
    .filter((d): d is Manifest => !!d);
}

export function loadYamlDir(dir: string): Array<{ file: string; docs: Manifest[] }> {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => ({ file: f, docs: loadYaml(join(dir, f)) }));
}

export const CRD_DIR = join(REPO_ROOT, 'examples/crds');

/** Server-side apply (force): idempotent and safe when several test files apply the same object. */
export async function applyManifest<T extends k8s.KubernetesObject>(
  kc: k8s.KubeConfig,
  obj: T,
  fieldManager = 'kpromo-test',
): Promise<T> {
  const client = k8s.KubernetesObjectApi.makeApiClient(kc);
  // client-node serializes built-in kinds through its generated models, which silently drop
  // wire-named keys such as `x-kubernetes-validations` or `default` unless the object was first
  // deserialized into the model (what its own YAML loader does).
  const typed = k8s.loadYaml<T>(stringify(obj));
  return client.patch(typed, undefined, undefined, fieldManager, true, k8s.PatchStrategy.ServerSideApply);
}

export const ADMISSION_POLICY = join(REPO_ROOT, 'examples/deploy/admission-policy.yaml');

/**
 * The admission policies' parameter naming the kpromo controller's identity (its username): the
 * example's ConfigMap, in the namespace examples/deploy/controller.yaml deploys to.
 */
export const CONTROLLER_IDENTITY = { namespace: 'kpromo', name: 'kpromo-controller-identity' } as const;

/** The harness admin's username (client certificate CN, test/cluster/controlPlane.ts): the identity the test controllers run as. */
export const HARNESS_CONTROLLER_USER = 'kpromo-admin';

/**
 * Applies the generated kpromo CRDs and the admission policies (examples/deploy), and waits until
 * the apiserver serves the CRDs and enforces the policies. Their controller identity parameter lists
 * the harness admin besides the example's ServiceAccount: the test controllers run as the admin.
 */
export async function applyCrds(kc: k8s.KubeConfig): Promise<void> {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const crds = loadYamlDir(CRD_DIR).flatMap((f) => f.docs);
  for (const crd of crds) await applyManifest(kc, crd);
  for (const crd of crds) {
    const name = crd.metadata?.name as string;
    await waitFor(`CRD ${name} Established`, async () => {
      const c = await ext.readCustomResourceDefinition({ name });
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
  }
  await ensureNamespace(kc, CONTROLLER_IDENTITY.namespace);
  for (const doc of loadYaml(ADMISSION_POLICY)) await applyManifest(kc, withHarnessController(doc));
  await waitForAdmissionPolicy(kc);
}

/** The example's controller identity ConfigMap, listing the harness admin too; any other document as it is. */
function withHarnessController(doc: Manifest): Manifest {
  const m = doc.metadata;
  if (
    doc.kind !== 'ConfigMap' ||
    m?.name !== CONTROLLER_IDENTITY.name ||
    m?.namespace !== CONTROLLER_IDENTITY.namespace
  )
    return doc;
  return { ...doc, data: { ...(doc.data as Record<string, string>), harness: HARNESS_CONTROLLER_USER } };
}

/**
 * The apiserver compiles a new policy asynchronously: probe with a server-side dry run of a plan
 * whose approval names another plan's uid until it is refused (a rule that binds every writer,
 * the admin running the tests included; other rules exempt the controller, which the admin is
 * here). The policy refuses everything until it sees its controller identity parameter, with
 * another message: the probe waits for that too.
 */
async function waitForAdmissionPolicy(kc: k8s.KubeConfig): Promise<void> {
  const client = k8s.KubernetesObjectApi.makeApiClient(kc);
  const probe = {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name: 'kpromo-admission-probe', namespace: 'default' },
    spec: {
      flow: 'probe',
      from: 'a',
      to: 'b',
      candidates: [],
      approvals: [{ user: 'kpromo-probe-nobody', planUID: 'not-this-plan' }],
    },
  };
  await waitFor('admission policy kpromo-plan-approvals enforced', async () => {
    try {
      await client.create(probe, undefined, 'All');
      return false;
    } catch (e) {
      return /must name the plan it approves/.test(String((e as { body?: unknown }).body ?? e));
    }
  });
  // A policy whose parameters are kpromo objects (kpromo-application-release: the namespace's
  // plans) is compiled once the apiserver's REST mapping knows the CRD, which can come seconds after
  // the CRD is Established; until then it refuses every write it judges ("failed to find resource
  // referenced by paramKind"). An Application no plan releases is let through once it is ready.
  const app = {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'Application',
    metadata: { name: 'kpromo-admission-probe', namespace: 'default' },
    spec: { owner: 'probe', image: { repository: 'probe/app' }, workloads: [{ kind: 'Deployment', name: 'app' }] },
  };
  let last = '';
  await waitFor('admission policy kpromo-application-release ready', async () => {
    try {
      await client.create(app, undefined, 'All');
      return true;
    } catch (e) {
      last = String((e as { body?: unknown }).body ?? e);
      return false;
    }
  }).catch((e: Error) => {
    throw new Error(`${e.message}; last answer: ${last}`);
  });
}

export async function ensureNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  await applyManifest(kc, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

export async function deleteNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.deleteNamespace({ name }).catch(() => undefined);
}
