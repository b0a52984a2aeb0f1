import type { MsTeamsTarget } from '@kpromo/api';
import type { ReleaseEvent } from '../../extension/notificationProvider.js';
import type { GuardedResponse } from '../../net/guardedFetch.js';
import { webhookUrlForLogs } from '../deliverWebhook.js';
import { chatDigest, type EventSummary, summarizeEvent, truncate } from '../eventText.js';
import { jsonBody, statusVerdict, type Verdict } from '../retryingRequest.js';
import type { NotificationTarget } from './types.js';

/**
 * Microsoft Teams through a Workflows webhook: a message whose one attachment is an Adaptive Card
 * (https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using#send-adaptive-cards-using-an-incoming-webhook).
 * Workflows answer 202 without a message id, so events of one plan cannot thread: one card each.
 */

export const ADAPTIVE_CARD_CONTENT_TYPE = 'application/vnd.microsoft.card.adaptive';
export const ADAPTIVE_CARD_SCHEMA = 'http://adaptivecards.io/schemas/adaptive-card.json';
/** The newest version Teams renders everywhere (https://learn.microsoft.com/en-us/microsoftteams/platform/task-modules-and-cards/cards/cards-reference#adaptive-card). */
export const ADAPTIVE_CARD_VERSION = '1.5';

export type CardElement =
  | {
      type: 'TextBlock';
      text: string;
      wrap?: boolean;
      weight?: 'Bolder';
      size?: 'Small' | 'Medium' | 'Large';
      color?: 'Good' | 'Attention' | 'Warning' | 'Accent';
      isSubtle?: boolean;
      style?: 'heading';
    }
  | { type: 'FactSet'; facts: Array<{ title: string; value: string }> };

export interface AdaptiveCard {
  $schema: typeof ADAPTIVE_CARD_SCHEMA;
  type: 'AdaptiveCard';
  version: typeof ADAPTIVE_CARD_VERSION;
  body: CardElement[];
  msteams?: { width: 'Full' };
}

export interface TeamsMessage {
  type: 'message';
  attachments: Array<{ contentType: typeof ADAPTIVE_CARD_CONTENT_TYPE; contentUrl: null; content: AdaptiveCard }>;
}

const COLORS: Record<EventSummary['tone'], 'Good' | 'Attention' | 'Warning' | 'Accent'> = {
  success: 'Good',
  failure: 'Attention',
  pending: 'Warning',
  info: 'Accent',
};

/** Pure: the Workflows webhook body for one event (Teams caps a message at about 28 KB: texts are cut well below). */
export function teamsMessage(e: ReleaseEvent): TeamsMessage {
  const s = summarizeEvent(e);
  const body: CardElement[] = [
    {
      type: 'TextBlock',
      text: truncate(s.headline, 300),
      wrap: true,
      weight: 'Bolder',
      size: 'Medium',
      style: 'heading',
      color: COLORS[s.tone],
    },
    {
      type: 'FactSet',
      facts: s.facts.map((f) => ({
        title: f.name,
        value: truncate(f.name === 'Digest' ? chatDigest(f.value) : f.value, 300),
      })),
    },
  ];
  if (s.message) body.push({ type: 'TextBlock', text: truncate(s.message, 2000), wrap: true });
  body.push({ type: 'TextBlock', text: `kpromo · ${e.type} · ${e.time}`, wrap: true, isSubtle: true, size: 'Small' });
  return {
    type: 'message',
    attachments: [
      {
        contentType: ADAPTIVE_CARD_CONTENT_TYPE,
        contentUrl: null,
        content: {
          $schema: ADAPTIVE_CARD_SCHEMA,
          type: 'AdaptiveCard',
          version: ADAPTIVE_CARD_VERSION,
          body,
          msteams: { width: 'Full' },
        },
      },
    ],
  };
}

/** Workflows errors are JSON `{error: {code, message}}`; only a code-like `code` is repeated. */
export function teamsVerdict(res: GuardedResponse, shown: string): Verdict<GuardedResponse> {
  const code = jsonBody<{ error?: { code?: unknown } }>(res)?.error?.code;
  return statusVerdict(res, shown, typeof code === 'string' && /^[A-Za-z0-9_.]{1,64}$/.test(code) ? code : undefined);
}

export const msteamsTarget: NotificationTarget<MsTeamsTarget> = {
  kind: 'msteams',
  async deliver(spec, ctx) {
    const url = await ctx.secrets.url(spec.webhookSecretRef, 'spec.msteams.webhookSecretRef');
    const shown = webhookUrlForLogs(url);
    const { value: _, ...outcome } = await ctx.request({
      url,
      shown,
      body: JSON.stringify(teamsMessage(ctx.event)),
      headers: () => ({ 'content-type': 'application/json', 'user-agent': 'kpromo-controller' }),
      maxBodyBytes: 4096,
      judge: (res) => teamsVerdict(res, shown),
    });
    return outcome;
  },
};
