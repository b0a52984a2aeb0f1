import type { WebhookTarget } from '@kpromo/api';
import type { ReleaseEvent } from '../../extension/notificationProvider.js';
import { webhookHeaders, webhookUrlForLogs } from '../deliverWebhook.js';
import type { NotificationSecrets } from '../secretRefs.js';
import type { NotificationTarget } from './types.js';

/** Key read from spec.webhook.secretRef when it names none. */
export const DEFAULT_SECRET_KEY = 'secret';

/** Header names plain spec.webhook.headers may not carry: credentials belong in headersSecretRef. */
const SENSITIVE_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization', 'x-api-key']);
const SENSITIVE_PATTERN = /token|secret|key|auth/i;
/** Set by the HTTP client or meaningful to the connection, not to the receiver: never from a CR. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Why a header (name from `where`) may not be sent, or undefined. Never quotes the value. */
function headerProblem(name: string, value: string, where: string): string | undefined {
  if (!HEADER_NAME.test(name)) return `${where} has an invalid header name ${JSON.stringify(name)}`;
  if (RESERVED_HEADERS.has(name.toLowerCase()) || name.toLowerCase().startsWith('x-kpromo-'))
    return `${where} may not set header ${name}`;
  if (!HEADER_VALUE.test(value)) return `${where}: the value of header ${name} contains control characters`;
  return undefined;
}

/**
 * Plain spec.webhook.headers are readable by everyone who can read the Notification: refuse
 * credentials there (Authorization, Cookie, X-Api-Key, names with token/secret/key/auth).
 */
export function plainHeadersProblem(headers: Record<string, string> | undefined): string | undefined {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (SENSITIVE_HEADERS.has(name.toLowerCase()) || SENSITIVE_PATTERN.test(name))
      return `spec.webhook.headers.${name} looks like a credential and is refused in plain spec; put it in a Secret referenced by spec.webhook.headersSecretRef (its keys are header names)`;
    const p = headerProblem(name, value, 'spec.webhook.headers');
    if (p) return p;
  }
  return undefined;
}

/** The JSON body receivers get; `id` equals the x-kpromo-delivery header. */
export function webhookPayload(id: string, e: ReleaseEvent): string {
  return JSON.stringify({ id, type: e.type, time: e.time, data: e });
}

/** Plain (non-sensitive) headers plus the ones from spec.webhook.headersSecretRef; throws a status-safe Error. */
async function headers(spec: WebhookTarget, secrets: NotificationSecrets, name: string) {
  const problem = plainHeadersProblem(spec.headers);
  if (problem) throw new Error(`Notification ${name}: ${problem}`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.headers ?? {})) out[k.toLowerCase()] = v;
  const ref = spec.headersSecretRef;
  if (ref) {
    const field = 'spec.webhook.headersSecretRef';
    const data = await secrets.data(ref.name, field, spec.url, 'spec.webhook.url');
    for (const [k, v] of Object.entries(data)) {
      const p = headerProblem(k, v, `Secret ${ref.name} (${field} of Notification ${name})`);
      if (p) throw new Error(p);
      out[k.toLowerCase()] = v;
    }
  }
  return out;
}

/** `webhook`: kpromo's own signed JSON event, to any URL (signature: signWebhook.ts). */
export const webhookTarget: NotificationTarget<WebhookTarget> = {
  kind: 'webhook',
  problem: (spec) => plainHeadersProblem(spec.headers),
  async deliver(spec, ctx) {
    const extra = await headers(spec, ctx.secrets, ctx.name);
    // Sending unsigned when a signature was asked for would teach receivers to accept unsigned calls.
    const secret = spec.secretRef
      ? await ctx.secrets.value(
          spec.secretRef,
          DEFAULT_SECRET_KEY,
          'spec.webhook.secretRef',
          spec.url,
          'spec.webhook.url',
        )
      : undefined;
    const d = {
      body: webhookPayload(ctx.deliveryId, ctx.event),
      eventType: ctx.event.type,
      deliveryId: ctx.deliveryId,
      secret,
      headers: extra,
    };
    const { value: _, ...outcome } = await ctx.request({
      url: spec.url,
      shown: webhookUrlForLogs(spec.url),
      body: d.body,
      headers: () => webhookHeaders(d, Math.floor(Date.now() / 1000).toString()),
    });
    return outcome;
  },
};
