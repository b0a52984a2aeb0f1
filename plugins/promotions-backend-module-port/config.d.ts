// Config schema of the Port module (src/config.ts reads and checks every value, with its defaults).
export interface Config {
  promotions?: {
    port?: {
      /** Port's API (default https://api.getport.io). */
      baseUrl?: string;
      clientId: string;
      /**
       * Port client secret: the backend's Port API credential and the webhook's HMAC signing key.
       * @visibility secret
       */
      clientSecret: string;
      /** Accepted age of x-port-timestamp, and how long a run id is remembered against replays (default 300). */
      maxSignatureAgeSeconds?: number;
      /** Run ids remembered at most (replay protection); a run needing more is refused with 503 (default 10000). */
      maxRecentRuns?: number;
      /** Exact Port action identifiers (default kpromo_promote / kpromo_rollback). */
      actions?: {
        promote?: string;
        rollback?: string;
        continue?: string;
        stopLine?: string;
        resumeLine?: string;
        adopt?: string;
      };
      /** Namespaces runs may act in (default: promotions.controller.defaultNamespace). */
      namespaces?: string[];
      /** x-kpromo-user of a run; `{email}` exactly once (default `port:{email}`). */
      identity?: string;
      /** How long a run follows its plan before reporting a timeout (default 1800). */
      waitTimeoutSeconds?: number;
      pollIntervalMs?: number;
      /** Port actions on custom resources: create_/update_/delete_<blueprint> write `plural` of `apiVersion`. */
      resourceActions?: Array<{ blueprint: string; apiVersion: string; plural: string }>;
      /** The exporter's name for the controller's cluster; a run naming another cluster is refused. */
      cluster?: string;
    };
  };
}
