import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Delivery } from '@kpromo/api';
import type { KubeRest } from '@kpromo/controller/kube';
import { stringify } from 'yaml';
import {
  createBareRepo,
  type Flux,
  type FluxStatus,
  type GitHttpServer,
  gitRepository,
  kustomization,
  startGitHttpServer,
  stateDir,
  waitFor,
} from '../index.js';
import { applyCr, crs } from './e2e.js';

/**
 * A GitOps repository that the real Flux source-controller pulls over smart HTTP (basic auth, one
 * Secret that kpromo's git delivery may use too) and Kustomizations of the real kustomize-controller
 * applying its app folders: the shared setup of the test files that watch Flux apply what lands in git.
 */
export interface Gitops {
  repo: ReturnType<typeof createBareRepo>;
  git: GitHttpServer;
  /** The repository's URL on the git server. */
  url: string;
  /** The credentials Secret (keys username/password; label promotions.kpromo.dev/credential, annotation promotions.kpromo.dev/destinations). */
  secret: string;
  /** What that Secret holds, for another writer of the repository (a person or a CI job pushing too). */
  auth: { username: string; password: string };
  /**
   * Applies a Kustomization of `./apps/<app>` into `targetNamespace`: of Flux's own cluster (dev), or
   * of harness cluster `cluster` through its admin kubeconfig in a Secret (spec.kubeConfig), as a Flux
   * in a management cluster applies to another one. `wait`: Ready only once what it applied is healthy.
   * `orphan` (spec.deletionPolicy Orphan): deleting the Kustomization (stop) leaves what it applied,
   * so teardown never needs the target cluster to answer (a fault test may have taken it down); the
   * caller deletes the target namespace itself.
   */
  addApp(
    app: string,
    targetNamespace: string,
    opts?: boolean | { wait?: boolean; cluster?: string; orphan?: boolean },
  ): Promise<void>;
  /**
   * An Environment's `delivery` committing `valuesPath` of `path` to this repository with the
   * fixture's credentials; the verdict also waits for Kustomization `{app}` (see addApp) to apply the
   * commit, read from the Environment's cluster or (`cluster: 'control'`) the control cluster.
   */
  gitDelivery(o: { path: string; valuesPath: string; cluster?: 'environment' | 'control' }): Delivery;
  /** Waits until Kustomization `app` reports `pred`; the error carries its last status and Flux's log. */
  waitKustomization(
    app: string,
    what: string,
    pred: (s: FluxStatus) => boolean,
    timeoutMs?: number,
  ): Promise<FluxStatus>;
  /** Deletes the Flux objects while Flux runs (it prunes and drops finalizers), then stops the git server. */
  stop(): Promise<void>;
}

const USER = 'kpromo-bot';
const PASSWORD = 'gitops-fixture-pw';

export const fluxPath = (ns: string, plural: 'gitrepositories' | 'kustomizations', name: string) =>
  `/apis/${plural === 'gitrepositories' ? 'source' : 'kustomize'}.toolkit.fluxcd.io/v1/namespaces/${ns}/${plural}/${name}`;

/** The commit a Flux status revision (`main@sha1:<sha>`) names. */
export const appliedCommit = (s: FluxStatus) => /@sha1:([0-9a-f]{40})$/.exec(s.lastAppliedRevision ?? '')?.[1];

/** A repository on a git server of its own (a real forge, e.g. Gitea) instead of the fixture's. */
export interface GitopsRemote {
  /** Its clone URL (no credentials in it). */
  url: string;
  auth: { username: string; password: string };
  /** What the Secret's destinations annotation allows (the server's origin with a trailing slash). */
  destination: string;
}

export type RemoteGitops = Omit<Gitops, 'repo' | 'git'>;

export async function startGitops(o: {
  dev: KubeRest;
  flux: Flux;
  /** Namespace of the Flux objects and the Secret. */
  ns: string;
  files: Record<string, string>;
}): Promise<Gitops>;
export async function startGitops(o: {
  dev: KubeRest;
  flux: Flux;
  ns: string;
  remote: GitopsRemote;
}): Promise<RemoteGitops>;
export async function startGitops(
  o: { dev: KubeRest; flux: Flux; ns: string } & ({ files: Record<string, string> } | { remote: GitopsRemote }),
): Promise<Gitops | RemoteGitops> {
  const { dev, ns } = o;
  let local: { repo: Gitops['repo']; git: GitHttpServer } | undefined;
  if ('files' in o) {
    const repo = createBareRepo(o.files);
    local = { repo, git: await startGitHttpServer({ root: dirname(repo.dir), users: { [USER]: PASSWORD } }) };
  }
  const remote: GitopsRemote =
    'remote' in o
      ? o.remote
      : {
          url: local!.git.url('remote.git'),
          auth: { username: USER, password: PASSWORD },
          destination: `${local!.git.baseUrl}/`,
        };
  const { url, auth } = remote;
  const secret = 'gitops-creds';
  await dev.apply(
    `/api/v1/namespaces/${ns}/secrets/${secret}`,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/basic-auth',
      // Opted in as a credential for the git server only (credentialPolicy.ts).
      metadata: {
        name: secret,
        namespace: ns,
        labels: { 'promotions.kpromo.dev/credential': 'true' },
        annotations: { 'promotions.kpromo.dev/destinations': remote.destination },
      },
      data: {
        username: Buffer.from(auth.username).toString('base64'),
        password: Buffer.from(auth.password).toString('base64'),
      },
    },
    'ctl-test',
  );
  await dev.apply(
    fluxPath(ns, 'gitrepositories', 'gitops'),
    gitRepository({ namespace: ns, name: 'gitops', url, secretName: secret }),
    'ctl-test',
  );
  const apps: string[] = [];
  /** The kubeconfig Secret (key `value`) of a remote harness cluster, applied once. */
  const kubeconfigSecrets = new Map<string, Promise<string>>();
  const kubeconfigSecret = (cluster: string) => {
    let s = kubeconfigSecrets.get(cluster);
    if (!s) {
      const name = `${cluster}-kubeconfig`;
      const value = readFileSync(join(stateDir(), cluster, 'admin.kubeconfig'), 'utf8');
      s = dev
        .apply(
          `/api/v1/namespaces/${ns}/secrets/${name}`,
          {
            apiVersion: 'v1',
            kind: 'Secret',
            type: 'Opaque',
            metadata: { name, namespace: ns },
            data: { value: Buffer.from(value).toString('base64') },
          },
          'ctl-test',
        )
        .then(() => name);
      kubeconfigSecrets.set(cluster, s);
    }
    return s;
  };
  const status = async (name: string) =>
    (await dev.get<{ status?: FluxStatus }>(fluxPath(ns, 'kustomizations', name))).status;
  return {
    ...local,
    url,
    secret,
    auth,
    async addApp(app, targetNamespace, opts = false) {
      const { wait = false, cluster, orphan } = typeof opts === 'boolean' ? { wait: opts } : opts;
      apps.push(app);
      const k = kustomization({
        namespace: ns,
        name: app,
        source: 'gitops',
        path: `./apps/${app}`,
        targetNamespace,
        wait,
      });
      const spec = {
        ...k.spec,
        ...(cluster ? { kubeConfig: { secretRef: { name: await kubeconfigSecret(cluster) } } } : {}),
        ...(orphan ? { deletionPolicy: 'Orphan' } : {}),
      };
      await dev.apply(fluxPath(ns, 'kustomizations', app), { ...k, spec }, 'ctl-test');
    },
    gitDelivery: ({ path, valuesPath, cluster }) => ({
      method: 'git',
      git: {
        repository: url,
        branch: 'main',
        path,
        valuesPath,
        credentialsSecretRef: { name: secret },
        kustomization: { name: '{app}', namespace: ns, ...(cluster ? { cluster } : {}) },
      },
    }),
    async waitKustomization(app, what, pred, timeoutMs = 90_000) {
      let last: FluxStatus | undefined;
      try {
        return await waitFor(
          `Kustomization ${app} ${what}`,
          async () => {
            last = await status(app);
            return last && pred(last) ? last : undefined;
          },
          timeoutMs,
          500,
        );
      } catch (e) {
        throw new Error(
          `${(e as Error).message}; last status: ${JSON.stringify(last)}; Flux logs: ${o.flux.logs.kustomizeController}`,
        );
      }
    },
    async stop() {
      const objects = [
        ...apps.map((a) => fluxPath(ns, 'kustomizations', a)),
        fluxPath(ns, 'gitrepositories', 'gitops'),
      ];
      for (const p of objects) await dev.delete(p).catch(() => undefined);
      await waitFor(
        'Flux objects finalized',
        async () => (await Promise.all(objects.map((p) => dev.getOrUndefined(p)))).every((x) => !x),
        30_000,
      ).catch((e) => console.warn(`[flux] ${(e as Error).message}`));
      await local?.git.stop();
    },
  };
}

/**
 * An Argo Rollout (canary without pauses; kwok runs its pods) for a kustomize app folder, with
 * `image` as written in the file (a setter marker may follow it). Rollouts are not kustomize built-ins,
 * so the file sets the image itself.
 */
export function rolloutManifest(name: string, image: string): string {
  const body = stringify({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name, labels: { app: name } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          tolerations: [{ operator: 'Exists' }],
          containers: [{ name: 'main', image: 'IMAGE' }],
        },
      },
      strategy: { canary: { steps: [] } },
    },
  });
  return body.replace('image: IMAGE', `image: ${image}`);
}

/**
 * The two Environments of the GitOps test files, both on the dev cluster: `dev` (patch delivery into
 * `apps`, images in the source registry) and `prod` (`delivery`, into `gitops`, which only Flux
 * writes to; images under the `prod` prefix of the target registry unless `prefix` names another).
 */
export async function applyDevProdEnvironments(
  dev: KubeRest,
  o: { ns: string; apps: string; gitops: string; source: string; target: string; delivery: object; prefix?: string },
) {
  await applyCr(
    dev,
    crs.environment(o.ns, 'dev', {
      context: 'dev',
      namespace: o.apps,
      registry: { host: o.source, insecure: true },
      delivery: { method: 'patch' },
    }),
  );
  await applyCr(
    dev,
    crs.environment(o.ns, 'prod', {
      context: 'dev',
      namespace: o.gitops,
      registry: { host: o.target, prefix: o.prefix ?? 'prod', insecure: true },
      delivery: o.delivery,
    }),
  );
}

/** An Application (image shop/<name>) run by a Deployment in dev and by an Argo Rollout in prod. */
export function rolloutApplication(ns: string, name: string) {
  const cr = crs.application(ns, name, 'team-a');
  return {
    ...cr,
    spec: {
      ...cr.spec,
      workloads: [
        { kind: 'Deployment', name, environments: ['dev'] },
        { kind: 'Rollout', name, environments: ['prod'] },
      ],
    },
  };
}
