import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { runGit, writeTree } from '../git/gitRepo.js';

/** Flux API versions the tests use (served by the CRDs of the pinned controllers). */
export const FLUX_SOURCE_API = 'source.toolkit.fluxcd.io/v1';
export const FLUX_KUSTOMIZE_API = 'kustomize.toolkit.fluxcd.io/v1';

/** A GitRepository polling `url` every `interval`, with basic-auth credentials from `secretName` (keys username, password). */
export function gitRepository(o: {
  namespace: string;
  name: string;
  url: string;
  branch?: string;
  secretName?: string;
  interval?: string;
}) {
  return {
    apiVersion: FLUX_SOURCE_API,
    kind: 'GitRepository',
    metadata: { name: o.name, namespace: o.namespace },
    spec: {
      url: o.url,
      ref: { branch: o.branch ?? 'main' },
      interval: o.interval ?? '5s',
      timeout: '20s',
      ...(o.secretName ? { secretRef: { name: o.secretName } } : {}),
    },
  };
}

/**
 * A Kustomization applying `path` of a GitRepository into `targetNamespace`, pruning what the
 * repository no longer has; `wait` makes it Ready only once what it applied is healthy.
 */
export function kustomization(o: {
  namespace: string;
  name: string;
  source: string;
  path: string;
  targetNamespace: string;
  interval?: string;
  timeout?: string;
  wait?: boolean;
}) {
  return {
    apiVersion: FLUX_KUSTOMIZE_API,
    kind: 'Kustomization',
    metadata: { name: o.name, namespace: o.namespace },
    spec: {
      sourceRef: { kind: 'GitRepository', name: o.source },
      path: o.path,
      targetNamespace: o.targetNamespace,
      interval: o.interval ?? '5s',
      retryInterval: o.interval ?? '5s',
      timeout: o.timeout ?? '30s',
      prune: true,
      wait: o.wait ?? false,
    },
  };
}

/** What the tests read of a Kustomization's (or GitRepository's) status. */
export interface FluxStatus {
  observedGeneration?: number;
  lastAppliedRevision?: string;
  lastAttemptedRevision?: string;
  artifact?: { revision?: string; url?: string; digest?: string };
  conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
}

export const fluxReady = (s: FluxStatus | undefined) => s?.conditions?.find((c) => c.type === 'Ready');

/**
 * The files of one app in a GitOps repository, laid out for kustomize: a Deployment (kwok makes it
 * Ready: it tolerates the fake node's taints), and the image it runs in a local-config ConfigMap
 * (`image.yaml`, key `data.image`) that kustomize copies into the container (replacements) and does
 * not apply. kpromo's git delivery writes that value (`path: <dir>/image.yaml`, `valuesPath: data.image`):
 * a plain dot path, which a list such as `spec.template.spec.containers` cannot offer.
 */
export function kustomizeAppFiles(o: { dir: string; name: string; image: string; replicas?: number }) {
  const { dir, name } = o;
  const configMap = `${name}-image`;
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels: { app: name } },
    spec: {
      replicas: o.replicas ?? 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          tolerations: [{ operator: 'Exists' }],
          containers: [{ name: 'main', image: 'set-by-kustomize-from-image.yaml' }],
        },
      },
    },
  };
  return {
    [`${dir}/kustomization.yaml`]: stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: ['deployment.yaml', 'image.yaml'],
      replacements: [
        {
          source: { kind: 'ConfigMap', name: configMap, fieldPath: 'data.image' },
          targets: [
            {
              select: { kind: 'Deployment', name },
              fieldPaths: ['spec.template.spec.containers.[name=main].image'],
            },
          ],
        },
      ],
    }),
    [`${dir}/deployment.yaml`]: stringify(deployment),
    [`${dir}/image.yaml`]: `# The image ${name} runs here; promotions commit it (kpromo delivery.git valuesPath: data.image).\n${stringify(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: configMap, annotations: { 'config.kubernetes.io/local-config': 'true' } },
        data: { image: o.image },
      },
    )}`,
  };
}

const git = runGit;

/** Commits `files` (path → content) to `branch` of a bare repository on disk, as a person pushing would; returns the commit. */
export function pushFiles(bareDir: string, files: Record<string, string>, message: string, branch = 'main'): string {
  const work = mkdtempSync(join(tmpdir(), 'kpromo-push-'));
  try {
    git(work, 'clone', '-q', '--branch', branch, bareDir, '.');
    writeTree(work, files);
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', message);
    git(work, 'push', '-q', 'origin', `HEAD:refs/heads/${branch}`);
    return git(work, 'rev-parse', 'HEAD');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The commit `branch` of a bare repository points at. */
export const headCommit = (bareDir: string, branch = 'main') => git(bareDir, 'rev-parse', `refs/heads/${branch}`);
