import { NOTIFICATION_TARGETS, type Notification, type NotificationTargetKind } from '@kpromo/api';
import { discordTarget } from './discord.js';
import { githubTarget } from './github.js';
import { msteamsTarget } from './msteams.js';
import { slackTarget } from './slack.js';
import type { NotificationTarget } from './types.js';
import { webhookTarget } from './webhook.js';

/** Every built-in target, by its spec field: the one place a new one is registered. */
export const NOTIFICATION_TARGET_MODULES: {
  [K in NotificationTargetKind]: NotificationTarget<NonNullable<Notification['spec'][K]>>;
} = {
  webhook: webhookTarget,
  slack: slackTarget,
  msteams: msteamsTarget,
  discord: discordTarget,
  github: githubTarget,
};

export type ResolvedTarget =
  | { kind: NotificationTargetKind; spec: unknown; target: NotificationTarget<unknown> }
  | { problem: string };

/**
 * Pure: the one target a Notification (`name`: namespace/name, for messages) sets and its module, or why it cannot be used (the CRD's CEL
 * rule says the same; checked again because an older CRD or a server without CEL would let it in).
 */
export function resolveTarget(n: Notification, name: string): ResolvedTarget {
  const set = NOTIFICATION_TARGETS.filter((k) => n.spec[k] !== undefined && n.spec[k] !== null);
  if (set.length !== 1)
    return {
      problem: `Notification ${name}: set exactly one of spec.${NOTIFICATION_TARGETS.join(', spec.')} (${set.length ? `found ${set.map((k) => `spec.${k}`).join(' and ')}` : 'found none'})`,
    };
  const kind = set[0];
  const target = NOTIFICATION_TARGET_MODULES[kind] as NotificationTarget<unknown>;
  const spec = n.spec[kind];
  const problem = target.problem?.(spec);
  return problem ? { problem: `Notification ${name}: ${problem}` } : { kind, spec, target };
}
