import { type Static, Type } from '@sinclair/typebox';
import { Name, SecretKeyRef, StatusBase, StringEnum, StringMap } from '../schemaHelpers.js';

export const NOTIFICATION_EVENTS = [
  'PlanApproved',
  'PlanWaiting',
  'AppPromoted',
  'AppFailed',
  'PlanComplete',
  'PlanIncomplete',
  'PlanRolledBack',
  'VerificationFailed',
  'WaveStarted',
  'WaveWaiting',
  'WaveSucceeded',
  'WaveFailed',
  'DriftDetected',
] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];

/** The spec fields naming where events go; a Notification sets exactly one. */
export const NOTIFICATION_TARGETS = ['webhook', 'slack', 'msteams', 'discord', 'github'] as const;
export type NotificationTargetKind = (typeof NOTIFICATION_TARGETS)[number];

/** Retry and timeout knobs every target carries. */
const deliveryTuning = {
  timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 60, default: 10 })),
  maxAttempts: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 20,
      default: 5,
      description: 'Attempts per event; 429 (waiting for Retry-After), 5xx and network errors are retried.',
    }),
  ),
};

const secretRef = (description: string) => Type.Object(SecretKeyRef.properties, { description });

/** The rule of every Secret a Notification sends (controller/src/credentials/credentialPolicy.ts). */
const OPT_IN =
  ' The Secret must opt in: label promotions.kpromo.dev/credential: "true" and annotation promotions.kpromo.dev/destinations listing where it may be sent (comma-separated: host or host:port = https only, *.example.com = one more label, or an http(s) URL prefix); otherwise nothing is sent and the status says what to add.';
const optIn = (where: string) => OPT_IN.replace('listing where it may be sent', where);

/** http(s) base URL of a provider API; a token is sent there only when its Secret allows it. */
const apiUrl = (description: string) =>
  Type.Optional(Type.String({ pattern: '^https?://[^\\s?#@]+$', maxLength: 512, description }));

export const WebhookTarget = Type.Object(
  {
    url: Type.String({ pattern: '^https?://', description: 'Receives a JSON POST per event.' }),
    secretRef: Type.Optional(
      secretRef(
        `Secret key (default "secret") holding the HMAC-SHA256 key of x-kpromo-signature.${optIn('listing the webhook URLs allowed to receive its signatures')}`,
      ),
    ),
    headers: Type.Optional(
      StringMap(
        'Extra non-sensitive request headers. Credentials (Authorization, Cookie, X-Api-Key, names containing token, secret, key or auth) are refused here: use headersSecretRef.',
      ),
    ),
    headersSecretRef: Type.Optional(
      Type.Object(
        { name: Name('Secret name, in the same namespace as the Notification.') },
        {
          description: `A Secret whose keys are header names and values header values (Authorization, API keys), sent to url.${OPT_IN}`,
        },
      ),
    ),
    ...deliveryTuning,
  },
  { description: "Generic: kpromo's signed JSON event (x-kpromo-signature HMAC when secretRef is set)." },
);

export const SlackTarget = Type.Object(
  {
    webhookSecretRef: Type.Optional(
      secretRef(
        `Secret key (default "url") holding a Slack incoming-webhook URL (https://hooks.slack.com/services/...). One message per event; incoming webhooks cannot thread.${optIn('listing where it may be sent (it must allow the URL it holds)')}`,
      ),
    ),
    tokenSecretRef: Type.Optional(
      secretRef(
        `Secret key (default "token") holding a bot token (xoxb-...) with chat:write: messages go through chat.postMessage and the events of one plan are replies in its thread.${optIn('listing where it may be sent (it must allow apiURL; slack.com for the default)')}`,
      ),
    ),
    channel: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 80,
        pattern: '^#?[A-Za-z0-9._-]+$',
        description: 'Channel ID (C0123ABCD) or name for chat.postMessage; required with tokenSecretRef.',
      }),
    ),
    apiURL: apiUrl(
      'Slack Web API base (default https://slack.com/api; https://slack-gov.com/api for GovSlack). The token goes there only when annotation promotions.kpromo.dev/destinations of its Secret allows it.',
    ),
    ...deliveryTuning,
  },
  {
    description: 'Slack Block Kit messages, through an incoming webhook or chat.postMessage.',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.webhookSecretRef) != has(self.tokenSecretRef)',
        message: 'slack: set exactly one of webhookSecretRef (incoming webhook) or tokenSecretRef (chat.postMessage)',
      },
      {
        rule: '!has(self.tokenSecretRef) || has(self.channel)',
        message: 'slack.channel is required with tokenSecretRef',
      },
      {
        rule: '!has(self.webhookSecretRef) || (!has(self.channel) && !has(self.apiURL))',
        message: 'slack.channel and slack.apiURL apply to tokenSecretRef only (an incoming webhook has its channel)',
      },
    ],
  },
);

export const MsTeamsTarget = Type.Object(
  {
    webhookSecretRef: secretRef(
      `Secret key (default "url") holding the Teams Workflows webhook URL ("Post to a channel when a webhook request is received"). Each event is an Adaptive Card 1.5 message.${optIn('listing where it may be sent (it must allow the URL it holds)')}`,
    ),
    ...deliveryTuning,
  },
  { description: 'Microsoft Teams, through a Workflows (Power Automate) webhook.' },
);

export const DiscordTarget = Type.Object(
  {
    webhookSecretRef: secretRef(
      `Secret key (default "url") holding a Discord webhook URL (https://discord.com/api/webhooks/<id>/<token>). A plan gets one message, edited as its events arrive.${optIn('listing where it may be sent (it must allow the URL it holds)')}`,
    ),
    ...deliveryTuning,
  },
  { description: 'Discord, through a channel webhook (embeds).' },
);

export const GitHubTarget = Type.Object(
  {
    tokenSecretRef: secretRef(
      `Secret key (default "token") holding a token allowed to write commit statuses (fine-grained: "Commit statuses: write"; classic: repo:status).${optIn('listing where it may be sent (it must allow apiURL; api.github.com for the default)')}`,
    ),
    apiURL: apiUrl(
      'REST API base (default https://api.github.com; GitHub Enterprise Server: https://<host>/api/v3). The token goes there only when annotation promotions.kpromo.dev/destinations of its Secret allows it.',
    ),
    repositories: Type.Array(Type.String({ pattern: '^[A-Za-z0-9-]+/([A-Za-z0-9._-]+|[*])$', maxLength: 200 }), {
      minItems: 1,
      maxItems: 100,
      description:
        'Repositories (owner/name, or owner/* for all of an owner) statuses may be posted to. Image labels are written by whoever built the image: one naming another repository is skipped.',
    }),
    targetURL: Type.Optional(
      Type.String({
        pattern: '^https?://',
        maxLength: 1024,
        description:
          'Link of each status (target_url); {namespace}, {plan}, {application} and {environment} are replaced (URL-encoded).',
      }),
    ),
    ...deliveryTuning,
  },
  {
    description:
      "Commit statuses (context kpromo/<environment>) on the commit an image was built from, named by its OCI labels org.opencontainers.image.source (a repository URL on this GitHub's host) and org.opencontainers.image.revision (the commit SHA); images without them are skipped.",
  },
);

export const NotificationSpec = Type.Object(
  {
    events: Type.Array(StringEnum(NOTIFICATION_EVENTS), { minItems: 1 }),
    flows: Type.Optional(
      Type.Array(Name('PromotionFlow name'), { description: 'Only these flows; all when omitted.' }),
    ),
    webhook: Type.Optional(WebhookTarget),
    slack: Type.Optional(SlackTarget),
    msteams: Type.Optional(MsTeamsTarget),
    discord: Type.Optional(DiscordTarget),
    github: Type.Optional(GitHubTarget),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: '(has(self.webhook) ? 1 : 0) + (has(self.slack) ? 1 : 0) + (has(self.msteams) ? 1 : 0) + (has(self.discord) ? 1 : 0) + (has(self.github) ? 1 : 0) == 1',
        message: 'set exactly one of webhook, slack, msteams, discord or github',
      },
    ],
  },
);

/**
 * Where later events of a plan go in the conversation its first event started (a Slack thread's
 * root ts, a Discord message to edit). Kept in status so a restarted controller continues the thread.
 */
export const NotificationThread = Type.Object({
  plan: Name('PromotionPlan name (same namespace).'),
  /** The target and channel it was started for: another target or channel starts a new thread. */
  scope: Type.String({ maxLength: 128 }),
  id: Type.String({ minLength: 1, maxLength: 128, description: 'Slack message ts or Discord message id.' }),
  channel: Type.Optional(Type.String({ maxLength: 64, description: 'Slack channel ID the thread is in.' })),
  time: Type.String({ format: 'date-time' }),
});

/** Threads kept per Notification; the oldest is forgotten first (its plan's next event starts a new one). */
export const MAX_NOTIFICATION_THREADS = 50;

export const NotificationStatus = Type.Object({
  ...StatusBase,
  delivered: Type.Optional(Type.Integer({ minimum: 0 })),
  failed: Type.Optional(Type.Integer({ minimum: 0 })),
  skipped: Type.Optional(
    Type.Integer({ minimum: 0, description: 'Events with nothing to send (github: image without source labels).' }),
  ),
  lastDeliveryTime: Type.Optional(Type.String({ format: 'date-time' })),
  lastError: Type.Optional(Type.String({ maxLength: 1024 })),
  threads: Type.Optional(
    Type.Unsafe<Array<Static<typeof NotificationThread>>>({
      type: 'array',
      items: NotificationThread,
      maxItems: MAX_NOTIFICATION_THREADS,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['plan'],
    }),
  ),
});

export type WebhookTarget = Static<typeof WebhookTarget>;
export type SlackTarget = Static<typeof SlackTarget>;
export type MsTeamsTarget = Static<typeof MsTeamsTarget>;
export type DiscordTarget = Static<typeof DiscordTarget>;
export type GitHubTarget = Static<typeof GitHubTarget>;
export type NotificationThread = Static<typeof NotificationThread>;
export type NotificationSpec = Static<typeof NotificationSpec>;
export type NotificationStatus = Static<typeof NotificationStatus>;
