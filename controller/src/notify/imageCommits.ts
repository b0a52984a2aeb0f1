import type { Environment } from '@kpromo/api';
import { registryEndpoint } from '../extension/credentials.js';
import type { ReleaseEvent } from '../extension/notificationProvider.js';
import type { CacheView } from '../kube/cacheView.js';
import type { KubeRest } from '../kube/rest.js';
import { imageLabels } from '../oci/imageConfig.js';
import type { RegistryEndpoint } from '../oci/registryClient.js';
import { registryRepository } from '../util/imageRef.js';

/** One image an event is about, with its labels or why they could not be read. */
export interface ImageOfEvent {
  application: string;
  digest: string;
  labels?: Record<string, string>;
  error?: string;
}

/** The images an event is about, with their labels (for commit statuses). */
export interface ImageCommitSource {
  images(e: ReleaseEvent): Promise<ImageOfEvent[]>;
}

/**
 * Pure: the application images an event concerns. App events name theirs; PlanApproved and
 * PlanWaiting concern every candidate of the plan; other plan events none (their apps had their own).
 */
export function imagesOfEvent(
  e: ReleaseEvent,
  candidates: ReadonlyArray<{ application: string; from: { digest: string } }> | undefined,
): Array<{ application: string; digest: string }> {
  if (e.application) return e.digest ? [{ application: e.application, digest: e.digest }] : [];
  if (e.type === 'PlanApproved' || e.type === 'PlanWaiting')
    return (candidates ?? []).map((c) => ({ application: c.application, digest: c.from.digest }));
  return [];
}

export interface RegistryImageCommitsDeps {
  cache: Pick<CacheView, 'getPlan' | 'getEnvironment' | 'getApplication'>;
  control: KubeRest;
  /** Test seam; the OCI client otherwise. */
  readLabels?(ep: RegistryEndpoint, repository: string, digest: string): Promise<Record<string, string>>;
}

/**
 * Reads labels from the registries of the event's Environments with their credentials: the target's
 * first for a promoted app (the image is there now), the source's first otherwise.
 */
export function registryImageCommits(deps: RegistryImageCommitsDeps): ImageCommitSource {
  const read = deps.readLabels ?? ((ep, repo, digest) => imageLabels(ep, repo, digest));
  return {
    async images(e) {
      const plan = deps.cache.getPlan(e.namespace, e.plan);
      const wanted = imagesOfEvent(e, plan?.spec.candidates);
      const order = e.type === 'AppPromoted' ? [e.to, e.from] : [e.from, e.to];
      const envs = order
        .map((name) => deps.cache.getEnvironment(e.namespace, name))
        .filter((x): x is Environment => !!x);
      return Promise.all(
        wanted.map(async ({ application, digest }): Promise<ImageOfEvent> => {
          const app = deps.cache.getApplication(e.namespace, application);
          if (!app) return { application, digest, error: `Application ${e.namespace}/${application} not found` };
          const errors: string[] = [];
          for (const env of envs) {
            const repo = registryRepository(env.spec.registry.prefix, app.spec.image.repository);
            try {
              const ep = await registryEndpoint(deps.control, env, repo);
              return { application, digest, labels: await read(ep, repo, digest) };
            } catch (err) {
              errors.push(`${env.spec.registry.host}/${repo}@${digest}: ${(err as Error).message}`);
            }
          }
          return { application, digest, error: errors.join('; ') || `no Environment ${order.join(' or ')}` };
        }),
      );
    },
  };
}
