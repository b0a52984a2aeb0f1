import type { Application, Environment, WorkloadRef } from '@kpromo/api';
import { workloadsFor } from '../candidates/runningVersion.js';
import type { WorkloadKinds } from '../extension/plugin.js';
import type { WorkloadKind } from '../extension/workloadKind.js';
import type { Workload } from '../kube/cacheView.js';
import { resourcePath } from '../kube/paths.js';
import { isConflict, isNotFound, type KubeRest } from '../kube/rest.js';
import { at, containersOf, DEFAULT_POD_TEMPLATE } from '../rollout/builtinKind.js';

export const PLAN_ANNOTATION = 'promotions.kpromo.dev/plan';
/** The field manager of the controller's workload writes (drift: its own writes are never drift). */
export const KPROMO_FIELD_MANAGER = 'kpromo-controller';
const FIELD_MANAGER = KPROMO_FIELD_MANAGER;

/** A workload kind (e.g. one a plugin judges) this method cannot patch: the Environment needs another method. */
export class UnpatchableWorkloadError extends Error {
  override name = 'UnsupportedWorkloadKind';
  /** Retrying cannot help (see the plan step runner's error classification). */
  readonly permanent = true;
}

/** How long a recreated Job may take to disappear before its replacement is created. */
export const RECREATE_TIMEOUT_MS = 60_000;

/**
 * delivery.method=patch: set the container image of every workload of the app in the Environment
 * namespace, where each kind keeps its pod template (WorkloadKind.podTemplate) and the way its kind
 * says (WorkloadKind.patch):
 * - `strategic` (Deployment, StatefulSet, DaemonSet, CronJob): a strategic merge by container name,
 *   which touches only that container;
 * - `json` (Argo Rollout, a custom resource without strategic merge): a JSON patch of the image at
 *   the container's index, guarded by a `test` of its name;
 * - `recreate` (Job, whose pod template is immutable): the Job is deleted and created again with the
 *   new image (a Job already running the image is left alone).
 * Re-applying the same image is a no-op for the rollout (idempotent, as the step runner requires).
 */
export async function patchWorkloadImage(
  rest: KubeRest,
  env: Environment,
  app: Application,
  image: string,
  plan: string,
  kinds: WorkloadKinds,
): Promise<string[]> {
  const patched: string[] = [];
  const refs = workloadsFor(app, env.metadata.name);
  // Checked before the first patch, so a mixed list is not left half-patched.
  const resolved = refs.map((ref) => ({ ref, kind: kinds.get(ref.kind ?? 'Deployment') }));
  const other = resolved.find((r) => !r.kind?.patch);
  if (other)
    throw new UnpatchableWorkloadError(
      `${other.ref.kind} ${other.ref.name}: delivery.method patch updates ${[...kinds.values()]
        .filter((k) => k.patch)
        .map((k) => k.kind)
        .join(', ')} only; use a delivery method that handles ${other.ref.kind} (Environment ${env.metadata.name})`,
    );
  for (const { ref, kind } of resolved as Array<{ ref: WorkloadRef; kind: WorkloadKind }>) {
    const path = resourcePath(kind.resource, env.spec.namespace, ref.name);
    const where = `${kind.kind} ${env.spec.namespace}/${ref.name}`;
    const read = async () => {
      const w = await rest.getOrUndefined<Workload>(path);
      if (!w)
        throw new Error(
          `${where} not found in cluster ${rest.clusterName} (Environment ${env.metadata.name}); create it or fix Application ${app.metadata.name} spec.workloads`,
        );
      return w;
    };
    const template = kind.podTemplate ?? DEFAULT_POD_TEMPLATE;
    if (kind.patch === 'strategic') {
      let container = ref.container;
      if (!container) {
        container = containersOf(kind, await read())[0]?.name;
        if (!container) throw new Error(`${where} has no containers`);
      }
      await rest.request('PATCH', path, {
        contentType: 'application/strategic-merge-patch+json',
        body: {
          metadata: { annotations: { [PLAN_ANNOTATION]: plan } },
          ...nest(template, { spec: { containers: [{ name: container, image }] } }),
        },
        query: { fieldManager: FIELD_MANAGER },
      });
    } else if (kind.patch === 'json') {
      const w = await read();
      const cs = containersOf(kind, w);
      const i = ref.container ? cs.findIndex((c) => c.name === ref.container) : cs.length ? 0 : -1;
      if (i < 0) throw new Error(`${where} has no container ${ref.container ?? '(first)'}`);
      const base = pointer([...template, 'spec', 'containers', String(i)]);
      await rest.request('PATCH', path, {
        contentType: 'application/json-patch+json',
        // The test keeps a concurrent reordering of containers from getting the wrong one patched.
        body: [
          { op: 'test', path: `${base}/name`, value: cs[i].name },
          { op: 'replace', path: `${base}/image`, value: image },
        ],
        query: { fieldManager: FIELD_MANAGER },
      });
      await rest.request('PATCH', path, {
        contentType: 'application/merge-patch+json',
        body: { metadata: { annotations: { [PLAN_ANNOTATION]: plan } } },
        query: { fieldManager: FIELD_MANAGER },
      });
    } else {
      await recreate(rest, path, where, await read(), kind, ref.container, image, plan);
    }
    patched.push(`${kind.kind}/${ref.name}`);
  }
  return patched;
}

/** `{ a: { b: value } }` for the path `['a', 'b']`. */
function nest(path: readonly string[], value: unknown): Record<string, unknown> {
  return path.reduceRight<unknown>((v, k) => ({ [k]: v }), value) as Record<string, unknown>;
}

/** A JSON pointer (RFC 6901) for a path of keys. */
const pointer = (path: readonly string[]) =>
  path.map((k) => `/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** Labels and selector the Job controller generates from the Job's uid: a new Job gets its own. */
const GENERATED_JOB_LABELS = [
  'controller-uid',
  'batch.kubernetes.io/controller-uid',
  'job-name',
  'batch.kubernetes.io/job-name',
];

/** What a Job is created from again: its spec with the new image, without what the apiserver generated. */
export function recreatedJob(
  job: Record<string, unknown> & Workload,
  podTemplate: readonly string[],
  container: string,
  image: string,
  plan: string,
): Record<string, unknown> {
  const next = structuredClone(job) as Record<string, unknown> & {
    metadata: Record<string, unknown> & { annotations?: Record<string, string> };
    spec?: Record<string, unknown> & { manualSelector?: boolean };
  };
  const { name, namespace, labels, annotations, ownerReferences } = next.metadata;
  next.metadata = { name, namespace, labels, annotations: { ...annotations, [PLAN_ANNOTATION]: plan } };
  if (ownerReferences) next.metadata.ownerReferences = ownerReferences;
  delete next.status;
  const spec = next.spec ?? {};
  const tpl = at(next, podTemplate) as { metadata?: { labels?: Record<string, string> } } | undefined;
  if (!spec.manualSelector) {
    delete spec.selector;
    for (const l of GENERATED_JOB_LABELS) delete tpl?.metadata?.labels?.[l];
  }
  const containers = at(next, [...podTemplate, 'spec', 'containers']) as Array<{ name: string; image?: string }>;
  const c = containers.find((x) => x.name === container);
  if (c) c.image = image;
  return next;
}

/**
 * Deletes the object and creates it again with the new image (kinds whose pod template is immutable).
 * Known gap: a controller that dies between the delete and the create leaves no Job; the retry then
 * finds none and fails the app ("not found") until someone applies it again.
 */
async function recreate(
  rest: KubeRest,
  path: string,
  where: string,
  cur: Workload,
  kind: WorkloadKind,
  refContainer: string | undefined,
  image: string,
  plan: string,
): Promise<void> {
  const template = kind.podTemplate ?? DEFAULT_POD_TEMPLATE;
  const cs = containersOf(kind, cur);
  const c = refContainer ? cs.find((x) => x.name === refContainer) : cs[0];
  if (!c) throw new Error(`${where} has no container ${refContainer ?? '(first)'}`);
  // Already the new one (this step ran before, e.g. before a restart): nothing to do.
  if (c.image === image) return;
  const body = recreatedJob(cur as Record<string, unknown> & Workload, template, c.name, image, plan);
  const uid = cur.metadata.uid;
  try {
    await rest.request('DELETE', path, {
      // Only this very object (not a replacement someone created meanwhile); its pods go in the background.
      body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background', preconditions: { uid } },
    });
  } catch (e) {
    if (!isNotFound(e) && !isConflict(e)) throw e;
  }
  const collection = path.slice(0, path.lastIndexOf('/'));
  const deadline = Date.now() + RECREATE_TIMEOUT_MS;
  for (;;) {
    const now = await rest.getOrUndefined<Workload>(path);
    if (!now || now.metadata.uid !== uid) {
      if (now) return; // someone else created it already; the verdict judges what runs
      try {
        await rest.request('POST', collection, { body, query: { fieldManager: FIELD_MANAGER } });
        return;
      } catch (e) {
        if (!isConflict(e)) throw e; // 409 AlreadyExists: the old one is still being removed
      }
    }
    if (Date.now() > deadline) throw new Error(`${where} was not removed within ${RECREATE_TIMEOUT_MS / 1000}s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
