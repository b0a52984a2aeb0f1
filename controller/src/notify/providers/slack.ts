import type { SlackTarget } from '@kpromo/api';
import type { ReleaseEvent } from '../../extension/notificationProvider.js';
import type { GuardedResponse } from '../../net/guardedFetch.js';
import { redactUrl } from '../../net/redactUrl.js';
import { webhookUrlForLogs } from '../deliverWebhook.js';
import { chatDigest, type EventSummary, summarizeEvent, truncate } from '../eventText.js';
import { jsonBody, retryAfterMs, statusVerdict, type Verdict } from '../retryingRequest.js';
import type { NotificationTarget } from './types.js';

/**
 * Slack: Block Kit messages through an incoming webhook (https://api.slack.com/messaging/webhooks)
 * or chat.postMessage with a bot token (https://api.slack.com/methods/chat.postMessage), where the
 * events of one plan are replies in the thread of its first message.
 */

export const SLACK_API_URL = 'https://slack.com/api';

/** Documented limits (https://api.slack.com/reference/block-kit/blocks). */
export const SLACK_LIMITS = {
  blocks: 50,
  headerText: 150,
  sectionText: 3000,
  sectionFields: 10,
  fieldText: 2000,
  contextElements: 10,
} as const;

type Text = { type: 'plain_text'; text: string; emoji?: boolean } | { type: 'mrkdwn'; text: string };
export type SlackBlock =
  | { type: 'header'; text: Text & { type: 'plain_text' } }
  | { type: 'section'; text?: Text; fields?: Text[] }
  | { type: 'context'; elements: Text[] };

export interface SlackMessage {
  /** Fallback for notifications and screen readers; required with blocks by chat.postMessage. */
  text: string;
  blocks: SlackBlock[];
  channel?: string;
  thread_ts?: string;
  reply_broadcast?: boolean;
  unfurl_links?: boolean;
  unfurl_media?: boolean;
}

/** mrkdwn control characters (https://api.slack.com/reference/surfaces/formatting#escaping): no <!channel>, no links. */
export const slackEscape = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

const ICONS: Record<EventSummary['tone'], string> = {
  success: ':white_check_mark:',
  failure: ':x:',
  pending: ':hourglass_flowing_sand:',
  info: ':leftwards_arrow_with_hook:',
};

/** Terminal plan events are also shown in the channel, not only in the thread. */
const BROADCAST = new Set<ReleaseEvent['type']>([
  'PlanComplete',
  'PlanIncomplete',
  'PlanRolledBack',
  'VerificationFailed',
  'WaveFailed',
  'DriftDetected',
]);

/**
 * Pure: the Block Kit message of one event. A thread reply has no header block (the root carries
 * it). Every text is escaped and cut to Slack's limits.
 */
export function slackMessage(e: ReleaseEvent, o: { channel?: string; threadTs?: string } = {}): SlackMessage {
  const s = summarizeEvent(e);
  const field = (name: string, value: string) => ({
    type: 'mrkdwn' as const,
    text: truncate(`*${name}*\n${slackEscape(name === 'Digest' ? `\`${chatDigest(value)}\`` : value)}`, 2000),
  });
  const blocks: SlackBlock[] = [];
  if (o.threadTs)
    blocks.push({
      type: 'section',
      text: { type: 'mrkdwn', text: truncate(`${ICONS[s.tone]} *${slackEscape(s.headline)}*`, 3000) },
    });
  else blocks.push({ type: 'header', text: { type: 'plain_text', text: truncate(s.headline, 150), emoji: true } });
  blocks.push({ type: 'section', fields: s.facts.slice(0, 10).map((f) => field(f.name, f.value)) });
  if (s.message)
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: truncate(slackEscape(s.message), 3000) } });
  blocks.push({
    type: 'context',
    elements: [{ type: 'mrkdwn', text: slackEscape(`kpromo · ${e.type} · ${e.time}`) }],
  });
  return {
    ...(o.channel ? { channel: o.channel } : {}),
    ...(o.threadTs ? { thread_ts: o.threadTs, ...(BROADCAST.has(e.type) ? { reply_broadcast: true } : {}) } : {}),
    text: truncate(slackEscape(`${s.headline}${s.message ? `: ${s.message}` : ''}`), 3000),
    blocks,
    unfurl_links: false,
    unfurl_media: false,
  };
}

/** Slack error codes are snake_case words; nothing else from an answer is repeated. */
const slackCode = (v: unknown) => (typeof v === 'string' && /^[a-z0-9_]{1,64}$/.test(v) ? v : undefined);
/** chat.postMessage errors worth another attempt (https://api.slack.com/methods/chat.postMessage#errors). */
const TRANSIENT = new Set(['ratelimited', 'internal_error', 'fatal_error', 'service_unavailable', 'request_timeout']);
const THREAD_TS = /^\d{1,12}\.\d{1,8}$/;
const CHANNEL_ID = /^[A-Z0-9]{1,32}$/;

/** Reads a chat.postMessage answer: HTTP 200 with `ok` false is an error too. */
export function postMessageVerdict(res: GuardedResponse, shown: string): Verdict<{ channel: string; ts: string }> {
  if (res.status < 200 || res.status >= 300) return statusVerdict(res, shown) as Verdict<never>;
  const body = jsonBody<{ ok?: boolean; error?: unknown; channel?: unknown; ts?: unknown }>(res);
  if (!body?.ok) {
    const code = slackCode(body?.error) ?? 'no ok in the answer';
    return {
      ok: false,
      status: res.status,
      error: `${shown} chat.postMessage failed: ${code}`,
      retry: TRANSIENT.has(code),
      retryAfterMs: retryAfterMs(res.header('retry-after')),
    };
  }
  const { channel, ts } = body;
  if (typeof channel !== 'string' || !CHANNEL_ID.test(channel) || typeof ts !== 'string' || !THREAD_TS.test(ts))
    return {
      ok: false,
      status: res.status,
      error: `${shown} chat.postMessage answered without channel and ts`,
      retry: false,
    };
  return { ok: true, value: { channel, ts } };
}

/** Incoming-webhook errors come as a plain-text code (https://api.slack.com/messaging/webhooks#handling_errors). */
export function incomingWebhookVerdict(res: GuardedResponse, shown: string): Verdict<GuardedResponse> {
  return statusVerdict(res, shown, slackCode(res.body.toString('utf8').trim()));
}

const apiBase = (spec: SlackTarget) => (spec.apiURL ?? SLACK_API_URL).replace(/\/+$/, '');

export const slackTarget: NotificationTarget<SlackTarget> = {
  kind: 'slack',
  problem(spec) {
    if (!!spec.webhookSecretRef === !!spec.tokenSecretRef)
      return 'spec.slack: set exactly one of webhookSecretRef (incoming webhook) or tokenSecretRef (chat.postMessage)';
    if (spec.tokenSecretRef && !spec.channel) return 'spec.slack.channel is required with tokenSecretRef';
    return undefined;
  },
  async deliver(spec, ctx) {
    const e = ctx.event;
    if (spec.webhookSecretRef) {
      const url = await ctx.secrets.url(spec.webhookSecretRef, 'spec.slack.webhookSecretRef');
      const shown = webhookUrlForLogs(url);
      const { value: _, ...outcome } = await ctx.request({
        url,
        shown,
        body: JSON.stringify(slackMessage(e)),
        headers: () => ({ 'content-type': 'application/json; charset=utf-8', 'user-agent': 'kpromo-controller' }),
        maxBodyBytes: 1024,
        judge: (res) => incomingWebhookVerdict(res, shown),
      });
      return outcome;
    }
    const base = apiBase(spec);
    const token = await ctx.secrets.token(spec.tokenSecretRef!, 'spec.slack.tokenSecretRef', base, 'spec.slack.apiURL');
    const scope = `slack:${spec.channel}`;
    const anchor = ctx.threads.get(e.plan, scope);
    const url = `${base}/chat.postMessage`;
    const shown = `${redactUrl(base)}/chat.postMessage`;
    const message = slackMessage(e, { channel: anchor?.channel ?? spec.channel, threadTs: anchor?.id });
    const outcome = await ctx.request({
      url,
      shown,
      body: JSON.stringify(message),
      headers: () => ({
        authorization: `Bearer ${token}`,
        'content-type': 'application/json; charset=utf-8',
        'user-agent': 'kpromo-controller',
      }),
      maxBodyBytes: 64 * 1024,
      judge: (res) => postMessageVerdict(res, shown),
    });
    // The plan's first message roots its thread; replies keep the root.
    if (outcome.ok && outcome.value && !anchor)
      ctx.threads.set(e.plan, { scope, id: outcome.value.ts, channel: outcome.value.channel });
    const { value: _, ...rest } = outcome;
    return rest;
  },
};
