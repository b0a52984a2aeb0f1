import { type Static, Type } from '@sinclair/typebox';
import { Name, StringEnum } from '../schemaHelpers.js';

/** Go-style duration as Kubernetes and Flux write them: 90s, 30m, 1h30m, 168h. */
export const Duration = (description: string) =>
  Type.String({ description, pattern: '^([0-9]{1,6}(h|m|s))+$', maxLength: 32 });

/**
 * A time window in which promotions into a target are denied (a freeze) or, for `allow` windows,
 * the only times they may run. Recurring windows use a 5-field cron expression or an RFC 5545
 * RRULE for their start, plus a duration; one-off windows give start and end.
 */
export const FreezeWindow = Type.Object(
  {
    name: Name('Window name, shown in plan status and notifications.'),
    kind: Type.Optional(
      StringEnum(['deny', 'allow'] as const, {
        default: 'deny',
        description:
          'deny: promotions wait while the window is open. allow: when any allow window exists, promotions wait while none is open.',
      }),
    ),
    schedule: Type.Optional(
      Type.String({ description: 'Start times as a 5-field cron expression, e.g. "0 16 * * 5".', maxLength: 128 }),
    ),
    rrule: Type.Optional(
      Type.String({
        description: 'Start times as an RFC 5545 RRULE, e.g. "FREQ=WEEKLY;BYDAY=FR;BYHOUR=16;BYMINUTE=0".',
        maxLength: 512,
      }),
    ),
    duration: Type.Optional(Duration('How long each recurring window stays open, e.g. 64h.')),
    timeZone: Type.Optional(
      Type.String({
        description: 'IANA time zone of schedule/rrule, e.g. Europe/Berlin.',
        default: 'UTC',
        maxLength: 64,
      }),
    ),
    start: Type.Optional(Type.String({ format: 'date-time', description: 'One-off window start.' })),
    end: Type.Optional(Type.String({ format: 'date-time', description: 'One-off window end.' })),
    reason: Type.Optional(Type.String({ maxLength: 1024, description: 'Why, shown to people who wait.' })),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: '(has(self.schedule) ? 1 : 0) + (has(self.rrule) ? 1 : 0) + (has(self.start) ? 1 : 0) == 1',
        message: 'set exactly one of schedule, rrule or start/end',
      },
      {
        rule: '(!has(self.schedule) && !has(self.rrule)) || has(self.duration)',
        message: 'duration is required with schedule or rrule',
      },
      { rule: 'has(self.start) == has(self.end)', message: 'start and end go together' },
      {
        rule: '!has(self.start) || self.end > self.start',
        message: 'end must be after start',
      },
    ],
  },
);

/** Who must approve plans into a stage. Anyone holding the RBAC verb counts when users and groups are empty. */
export const RequiredApprovers = Type.Object({
  users: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { maxItems: 100 })),
  groups: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { maxItems: 100 })),
  count: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 10, default: 1, description: 'Distinct qualifying approvers needed.' }),
  ),
  forbidSelfApproval: Type.Optional(
    Type.Boolean({ description: 'The plan creator (spec.requestedBy) does not count as an approver.' }),
  ),
});

export const AutoPromotion = Type.Object({
  paused: Type.Optional(Type.Boolean({ description: 'Stop creating automatic plans for this stage.' })),
  debounce: Type.Optional(Duration('Wait this long after candidates change before creating a plan (default 30s).')),
  cooldown: Type.Optional(
    Duration(
      'Create no automatic plan until no new candidate version has appeared in the source stage for this long; then one plan takes the newest versions (a burst of releases gives one plan, not one per version).',
    ),
  ),
});

export type FreezeWindow = Static<typeof FreezeWindow>;
export type RequiredApprovers = Static<typeof RequiredApprovers>;
export type AutoPromotion = Static<typeof AutoPromotion>;
