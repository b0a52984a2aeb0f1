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
] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];

export const NotificationSpec = Type.Object({
  events: Type.Array(StringEnum(NOTIFICATION_EVENTS), { minItems: 1 }),
  flows: Type.Optional(Type.Array(Name('PromotionFlow name'), { description: 'Only these flows; all when omitted.' })),
  webhook: Type.Object({
    url: Type.String({ pattern: '^https?://', description: 'Receives a JSON POST per event.' }),
    secretRef: Type.Optional(SecretKeyRef),
    headers: Type.Optional(
      StringMap(
        'Extra non-sensitive request headers. Credentials (Authorization, Cookie, X-Api-Key, names containing token, secret, key or auth) are refused here: use headersSecretRef.',
      ),
    ),
    headersSecretRef: Type.Optional(
      Type.Object(
        { name: Name('Secret name, in the same namespace as the Notification.') },
        { description: 'A Secret whose keys are header names and values header values (Authorization, API keys).' },
      ),
    ),
    timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 60, default: 10 })),
    maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 5 })),
  }),
});

export const NotificationStatus = Type.Object({
  ...StatusBase,
  delivered: Type.Optional(Type.Integer({ minimum: 0 })),
  failed: Type.Optional(Type.Integer({ minimum: 0 })),
  lastDeliveryTime: Type.Optional(Type.String({ format: 'date-time' })),
  lastError: Type.Optional(Type.String()),
});

export type NotificationSpec = Static<typeof NotificationSpec>;
export type NotificationStatus = Static<typeof NotificationStatus>;
