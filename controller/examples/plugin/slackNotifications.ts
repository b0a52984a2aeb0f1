import type { NotificationProvider, ReleaseEvent } from '@kpromo/controller/plugin';

export interface SlackOptions {
  /** A Slack incoming-webhook URL (platform configuration, not from a custom resource). */
  webhookUrl: string;
  /** Only these event types; all when omitted. */
  events?: ReadonlyArray<ReleaseEvent['type']>;
  /** Sends one message; the default POSTs `{ text }` to the webhook URL. */
  post?: (url: string, body: { text: string }) => Promise<void>;
}

const postJson = async (url: string, body: { text: string }) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`Slack answered HTTP ${res.status}`);
};

/** One line per release event, e.g. "cart v2 promoted to prod (plan shop/release-42)". */
export function slackText(e: ReleaseEvent): string {
  const plan = `plan ${e.namespace}/${e.plan}`;
  const what = e.application ? `${e.application}${e.tag ? ` ${e.tag}` : ''}` : `${e.from} -> ${e.to}`;
  switch (e.type) {
    case 'AppPromoted':
      return `${what} promoted to ${e.to} (${plan})`;
    case 'AppFailed':
      return `${what} failed in ${e.to}: ${e.message ?? 'no detail'} (${plan})`;
    default:
      return `${e.type}: ${what}${e.message ? `: ${e.message}` : ''} (${plan})`;
  }
}

/**
 * Notification provider `slack`: posts release events to a Slack channel. notify() returns the
 * delivery's promise without waiting for it: the controller never lets it block a reconcile, logs
 * a failure, and waits for it on shutdown.
 */
export function slackNotifications(o: SlackOptions): NotificationProvider {
  const post = o.post ?? postJson;
  return {
    name: 'slack',
    notify(e) {
      if (o.events && !o.events.includes(e.type)) return;
      return post(o.webhookUrl, { text: slackText(e) });
    },
  };
}
