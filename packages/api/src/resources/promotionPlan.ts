import { type Static, Type } from '@sinclair/typebox';
import { ImageVersion, Name, StatusBase, StringEnum } from '../schemaHelpers.js';

export const Candidate = Type.Object({
  application: Name('Application name.'),
  from: Type.Object({
    tag: Type.String({ minLength: 1 }),
    digest: Type.String({ pattern: '^sha256:[a-f0-9]{64}$' }),
  }),
  to: Type.Optional(ImageVersion),
});

export const PromotionPlanSpec = Type.Object(
  {
    flow: Name('PromotionFlow this plan belongs to.'),
    from: Name('Source environment.'),
    to: Name('Target environment.'),
    action: Type.Optional(
      StringEnum(['promote', 'rollback'] as const, {
        default: 'promote',
        description: 'rollback restores the previous versions recorded in the status of rollbackOf.',
      }),
    ),
    rollbackOf: Type.Optional(Name('Plan whose changes this plan reverts (action=rollback).')),
    candidates: Type.Array(Candidate, {
      description: 'Release candidates. Empty for a rollback plan.',
      maxItems: 500,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['application'],
    }),
    approved: Type.Optional(Type.Boolean({ default: false, description: 'Set to true to promote.' })),
    approvedBy: Type.Optional(Type.String()),
  },
  {
    'x-kubernetes-validations': [
      { rule: 'self.from != self.to', message: 'from and to must be different environments' },
      {
        rule: "self.action != 'rollback' || has(self.rollbackOf)",
        message: 'rollbackOf is required when action is rollback',
      },
      {
        rule: '!has(oldSelf.approved) || !oldSelf.approved || self.candidates == oldSelf.candidates',
        message: 'candidates are immutable once the plan is approved',
      },
    ],
  },
);

export const AppPhase = StringEnum([
  'Pending',
  'Copying',
  'Writing',
  'RollingOut',
  'Succeeded',
  'Failed',
  'RolledBack',
] as const);

export const AppProgress = Type.Object({
  application: Name('Application name.'),
  phase: AppPhase,
  reason: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
  targetTag: Type.Optional(Type.String()),
  digest: Type.Optional(Type.String()),
  previous: Type.Optional(ImageVersion),
  copied: Type.Optional(Type.Boolean()),
  written: Type.Optional(Type.Boolean()),
  commit: Type.Optional(Type.String({ description: 'Git commit written for this app, if any.' })),
  attempts: Type.Optional(Type.Integer({ minimum: 0 })),
  startedAt: Type.Optional(Type.String({ format: 'date-time' })),
  finishedAt: Type.Optional(Type.String({ format: 'date-time' })),
});

export const PromotionPlanStatus = Type.Object({
  ...StatusBase,
  phase: Type.Optional(StringEnum(['Pending', 'Promoting', 'Complete', 'Incomplete', 'Failed', 'RolledBack'] as const)),
  apps: Type.Optional(
    Type.Unsafe<Array<Static<typeof AppProgress>>>({
      type: 'array',
      items: AppProgress,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['application'],
    }),
  ),
  succeeded: Type.Optional(Type.Integer({ minimum: 0 })),
  failed: Type.Optional(Type.Integer({ minimum: 0 })),
  startedAt: Type.Optional(Type.String({ format: 'date-time' })),
  completedAt: Type.Optional(Type.String({ format: 'date-time' })),
});

export type Candidate = Static<typeof Candidate>;
export type PromotionPlanSpec = Static<typeof PromotionPlanSpec>;
export type AppPhase = Static<typeof AppPhase>;
export type AppProgress = Static<typeof AppProgress>;
export type PromotionPlanStatus = Static<typeof PromotionPlanStatus>;
