import type { DiscordTarget } from '@kpromo/api';
import type { ReleaseEvent } from '../../extension/notificationProvider.js';
import type { GuardedResponse } from '../../net/guardedFetch.js';
import { webhookUrlForLogs } from '../deliverWebhook.js';
import { chatDigest, type EventSummary, summarizeEvent, truncate } from '../eventText.js';
import type { DeliveryOutcome } from '../retryingRequest.js';
import { jsonBody, retryAfterMs, safeProviderText, statusVerdict, type Verdict } from '../retryingRequest.js';
import type { DeliveryContext, NotificationTarget } from './types.js';

/**
 * Discord through a channel webhook. A plan gets one message: its first event is posted with
 * `?wait=true` (https://discord.com/developers/docs/resources/webhook#execute-webhook), which answers
 * the message and its id; each later event appends an embed by editing that message
 * (GET, then PATCH /messages/{id}: .../webhook#get-webhook-message, #edit-webhook-message).
 */

/** https://discord.com/developers/docs/resources/message#embed-object-embed-limits */
export const DISCORD_LIMITS = {
  embeds: 10,
  title: 256,
  description: 4096,
  fields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footerText: 2048,
  total: 6000,
} as const;

export interface DiscordEmbed {
  title?: string;
  description?: string;
  color?: number;
  timestamp?: string;
  fields?: Array<{ name: string; value: string; inline?: boolean }>;
  footer?: { text: string };
}

export interface DiscordMessage {
  embeds: DiscordEmbed[];
  /** No @everyone, role or user pings from anything in an event. */
  allowed_mentions: { parse: [] };
}

const COLORS: Record<EventSummary['tone'], number> = {
  success: 0x2eb67d,
  failure: 0xe01e5a,
  pending: 0xecb22e,
  info: 0x36c5f0,
};

/** Pure: the embed of one event, within Discord's limits. */
export function discordEmbed(e: ReleaseEvent): DiscordEmbed {
  const s = summarizeEvent(e);
  return {
    title: truncate(s.headline, DISCORD_LIMITS.title),
    ...(s.message ? { description: truncate(s.message, 1000) } : {}),
    color: COLORS[s.tone],
    timestamp: e.time,
    fields: s.facts.slice(0, DISCORD_LIMITS.fields).map((f) => ({
      name: f.name,
      value: truncate(f.name === 'Digest' ? `\`${chatDigest(f.value)}\`` : f.value, DISCORD_LIMITS.fieldValue),
      inline: true,
    })),
    footer: { text: `kpromo · ${e.type}` },
  };
}

/** Characters Discord counts towards the 6000 per message. */
export function embedChars(x: DiscordEmbed): number {
  return (
    (x.title?.length ?? 0) +
    (x.description?.length ?? 0) +
    (x.footer?.text.length ?? 0) +
    (x.fields ?? []).reduce((n, f) => n + f.name.length + f.value.length, 0)
  );
}

/** Pure: the newest embeds that fit one message (at most 10, at most 6000 characters); the oldest go first. */
export function fitEmbeds(all: DiscordEmbed[]): DiscordEmbed[] {
  const out = all.slice(-DISCORD_LIMITS.embeds);
  while (out.length > 1 && out.reduce((n, x) => n + embedChars(x), 0) > DISCORD_LIMITS.total) out.shift();
  return out;
}

export const discordMessage = (embeds: DiscordEmbed[]): DiscordMessage => ({
  embeds: fitEmbeds(embeds),
  allowed_mentions: { parse: [] },
});

/** An embed as read back from Discord, reduced to what we send (the rest is Discord's own). */
function ownEmbed(x: unknown): DiscordEmbed | undefined {
  if (!x || typeof x !== 'object') return undefined;
  const o = x as Record<string, unknown>;
  const str = (v: unknown, max: number) => (typeof v === 'string' ? truncate(v, max) : undefined);
  const fields = Array.isArray(o.fields)
    ? o.fields
        .filter(
          (f): f is { name: string; value: string; inline?: unknown } =>
            typeof f?.name === 'string' && typeof f?.value === 'string',
        )
        .slice(0, DISCORD_LIMITS.fields)
        .map((f) => ({
          name: truncate(f.name, DISCORD_LIMITS.fieldName),
          value: truncate(f.value, DISCORD_LIMITS.fieldValue),
          inline: f.inline === true,
        }))
    : undefined;
  const footer = str((o.footer as { text?: unknown } | undefined)?.text, DISCORD_LIMITS.footerText);
  const e: DiscordEmbed = {
    ...(str(o.title, DISCORD_LIMITS.title) ? { title: str(o.title, DISCORD_LIMITS.title) } : {}),
    ...(str(o.description, DISCORD_LIMITS.description)
      ? { description: str(o.description, DISCORD_LIMITS.description) }
      : {}),
    ...(typeof o.color === 'number' ? { color: o.color } : {}),
    ...(str(o.timestamp, 40) ? { timestamp: str(o.timestamp, 40) } : {}),
    ...(fields?.length ? { fields } : {}),
    ...(footer ? { footer: { text: footer } } : {}),
  };
  return Object.keys(e).length ? e : undefined;
}

const SNOWFLAKE = /^\d{1,25}$/;

/**
 * Reads a Discord answer: 429 waits `retry_after` (JSON seconds; the Retry-After header otherwise,
 * https://discord.com/developers/docs/topics/rate-limits#exceeding-a-rate-limit); errors repeat
 * Discord's numeric code and a cleaned message.
 */
export function discordVerdict(res: GuardedResponse, shown: string): Verdict<Record<string, unknown>> {
  const body = jsonBody<Record<string, unknown>>(res);
  if (res.status >= 200 && res.status < 300) return { ok: true, value: body ?? {} };
  const v = statusVerdict(
    res,
    shown,
    typeof body?.code === 'number'
      ? `Discord error ${body.code}: ${safeProviderText(body.message) ?? ''}`.trim()
      : undefined,
  );
  if (v.ok) return { ok: true, value: body ?? {} };
  const after = typeof body?.retry_after === 'number' && body.retry_after >= 0 ? body.retry_after * 1000 : undefined;
  return { ...v, retryAfterMs: after ?? retryAfterMs(res.header('retry-after')) };
}

/** The webhook URL with `/messages/{id}` and/or `?wait=true`, keeping its own query (e.g. thread_id). */
export function discordUrl(hook: string, o: { messageId?: string; wait?: boolean }): string {
  const u = new URL(hook);
  if (o.messageId) u.pathname = `${u.pathname.replace(/\/+$/, '')}/messages/${o.messageId}`;
  if (o.wait) u.searchParams.set('wait', 'true');
  return u.toString();
}

const SCOPE = 'discord';
const headers = () => ({ 'content-type': 'application/json', 'user-agent': 'kpromo-controller' });

async function postNew(
  ctx: DeliveryContext,
  hook: string,
  shown: string,
  embed: DiscordEmbed,
): Promise<DeliveryOutcome> {
  const res = await ctx.request({
    url: discordUrl(hook, { wait: true }),
    shown,
    body: JSON.stringify(discordMessage([embed])),
    headers,
    maxBodyBytes: 64 * 1024,
    judge: (r) => discordVerdict(r, shown),
  });
  const id = res.value?.id;
  if (res.ok && typeof id === 'string' && SNOWFLAKE.test(id)) ctx.threads.set(ctx.event.plan, { scope: SCOPE, id });
  const { value: _, ...outcome } = res;
  return outcome;
}

export const discordTarget: NotificationTarget<DiscordTarget> = {
  kind: 'discord',
  async deliver(spec, ctx) {
    const hook = await ctx.secrets.url(spec.webhookSecretRef, 'spec.discord.webhookSecretRef');
    const shown = webhookUrlForLogs(hook);
    const embed = discordEmbed(ctx.event);
    const anchor = ctx.threads.get(ctx.event.plan, SCOPE);
    if (!anchor) return postNew(ctx, hook, shown, embed);
    const url = discordUrl(hook, { messageId: anchor.id });
    const current = await ctx.request({
      url,
      shown,
      method: 'GET',
      headers,
      maxBodyBytes: 64 * 1024,
      judge: (r) => discordVerdict(r, shown),
    });
    // The message was deleted (or the webhook replaced): the plan starts a new one.
    const restart = () => {
      ctx.threads.forget(ctx.event.plan);
      return postNew(ctx, hook, shown, embed);
    };
    if (current.status === 404) return restart();
    if (!current.ok) {
      const { value: _, ...failed } = current;
      return failed;
    }
    const before = Array.isArray(current.value?.embeds) ? current.value.embeds.map(ownEmbed) : [];
    const edited = await ctx.request({
      url,
      shown,
      method: 'PATCH',
      body: JSON.stringify(discordMessage([...before.filter((x): x is DiscordEmbed => !!x), embed])),
      headers,
      maxBodyBytes: 64 * 1024,
      judge: (r) => discordVerdict(r, shown),
    });
    if (edited.status === 404) return restart();
    const { value: _, ...outcome } = edited;
    return outcome;
  },
};
