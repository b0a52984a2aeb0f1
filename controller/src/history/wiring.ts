import type { PromotionPlan } from '@kpromo/api';
import { registryEndpoint } from '../extension/credentials.js';
import type { CacheView } from '../kube/cacheView.js';
import type { KubeRest } from '../kube/rest.js';
import type { Logger } from '../observability/logger.js';
import { imageCreated } from '../oci/imageCreated.js';
import { registryRepository } from '../util/imageRef.js';
import { countDeployments, installDoraMetrics } from './doraMetrics.js';
import { HistoryRecorder } from './recorder.js';
import { DEFAULT_RETENTION, type Retention } from './segments.js';
import { historyStore } from './store.js';

/**
 * Pure: retention from the environment, each variable optional: KPROMO_HISTORY_MAX_AGE_DAYS,
 * KPROMO_HISTORY_MAX_ENTRIES_PER_MONTH (per environment). Throws naming the variable when one is not
 * a positive whole number.
 */
export function retentionFromEnv(env: Record<string, string | undefined>): Retention {
  const read = (name: string, dflt: number) => {
    const v = env[name];
    if (v === undefined || v === '') return dflt;
    if (!/^\d{1,7}$/.test(v) || Number(v) < 1) throw new Error(`${name}: must be a positive whole number, got "${v}"`);
    return Number(v);
  };
  return {
    ...DEFAULT_RETENTION,
    maxAgeDays: read('KPROMO_HISTORY_MAX_AGE_DAYS', DEFAULT_RETENTION.maxAgeDays),
    maxEntriesPerMonth: read('KPROMO_HISTORY_MAX_ENTRIES_PER_MONTH', DEFAULT_RETENTION.maxEntriesPerMonth),
  };
}

/**
 * The controller's release history: the recorder (a notification provider, so it sees every release
 * event) writing the ConfigMap log as the controller, image build times read from the Environments'
 * registries with their credentials (target first: the promoted image is there), and the DORA gauges.
 */
export function createHistoryRecorder(o: {
  cache: Pick<CacheView, 'plans' | 'environments' | 'getPlan' | 'getApplication' | 'getEnvironment'>;
  control: KubeRest;
  log: Logger;
  retention?: Retention;
}): HistoryRecorder & { close(): void } {
  const store = historyStore(o.control, o.retention ?? retentionFromEnv(process.env));
  const imageCreatedAt = async (plan: PromotionPlan, application: string, digest: string) => {
    const ns = plan.metadata.namespace ?? '';
    const app = o.cache.getApplication(ns, application);
    if (!app) return undefined;
    const errors: string[] = [];
    for (const name of [plan.spec.to, plan.spec.from]) {
      const env = o.cache.getEnvironment(ns, name);
      if (!env) continue;
      const repo = registryRepository(env.spec.registry.prefix, app.spec.image.repository);
      try {
        return await imageCreated(await registryEndpoint(o.control, env, repo), repo, digest);
      } catch (e) {
        errors.push(`${env.spec.registry.host}/${repo}@${digest}: ${(e as Error).message}`);
      }
    }
    if (errors.length) throw new Error(errors.join('; '));
    return undefined;
  };
  const recorder = new HistoryRecorder({
    cache: o.cache,
    store,
    imageCreatedAt,
    onAdded: countDeployments,
    log: o.log,
  });
  const uninstall = installDoraMetrics({ cache: o.cache, store, log: o.log });
  return Object.assign(recorder, {
    close() {
      recorder.stop();
      uninstall();
    },
  });
}
