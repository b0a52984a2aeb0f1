import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { REPO_ROOT } from './cluster/paths.js';
import { kubeConfigFor } from './kube.js';
import { applyCrds, ensureNamespace, loadYamlDir } from './manifests.js';

// The deployment manifests must be accepted by a real apiserver as they are (server-side dry run, so
// nothing is left behind apart from the two namespaces they target).
describe('examples/deploy manifests', () => {
  let kc: k8s.KubeConfig;
  beforeAll(async () => {
    kc = kubeConfigFor('dev', inject('kubeconfig'));
    await applyCrds(kc);
    await ensureNamespace(kc, 'kpromo');
    await ensureNamespace(kc, 'shop');
  });

  const files = loadYamlDir(join(REPO_ROOT, 'examples/deploy'));
  it.each(files.map((f) => [f.file, f.docs] as const))(
    '%s passes server-side validation (dry run)',
    async (_f, docs) => {
      const client = k8s.KubernetesObjectApi.makeApiClient(kc);
      expect(docs.length).toBeGreaterThan(0);
      for (const doc of docs) {
        const typed = k8s.loadYaml<k8s.KubernetesObject>(stringify(doc));
        const res = await client.patch(typed, undefined, 'All', 'kpromo-test', true, k8s.PatchStrategy.ServerSideApply);
        expect(res.metadata?.name).toBe(doc.metadata?.name);
      }
    },
  );
});
