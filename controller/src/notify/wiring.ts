import { readSecretObject } from '../credentials/secrets.js';
import type { CacheView } from '../kube/cacheView.js';
import type { KubeRest } from '../kube/rest.js';
import type { Egress } from '../net/guardedFetch.js';
import type { Logger } from '../observability/logger.js';
import { registryImageCommits } from './imageCommits.js';
import { NotificationStatusWriter } from './notificationStatus.js';
import { Notifier } from './notifier.js';

/**
 * The controller's Notifier: Notification resources from the cache, their Secrets, statuses and the
 * registries (for github commit statuses) through the control cluster.
 */
export function createNotifier(o: {
  cache: Pick<CacheView, 'notifications' | 'getPlan' | 'getEnvironment' | 'getApplication'>;
  control: KubeRest;
  /** Unused: Secrets are read with their labels and annotations (credentialPolicy.ts). */
  readSecret?(namespace: string, name: string, key: string): Promise<string | undefined>;
  egress: Egress;
  log: Logger;
}): Notifier {
  return new Notifier({
    listNotifications: () => o.cache.notifications(),
    readSecretObject: (ns, name) => readSecretObject(o.control, ns, name),
    status: new NotificationStatusWriter(o.control, o.log),
    commits: registryImageCommits({ cache: o.cache, control: o.control }),
    egress: o.egress,
    logger: o.log,
  });
}
