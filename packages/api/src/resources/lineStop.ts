import { type Static, Type } from '@sinclair/typebox';
import { Name, StatusBase, StringEnum } from '../schemaHelpers.js';

/**
 * "Stop the line": while a LineStop exists, no new plan starts and running plans start no further
 * app (apps in flight finish), in its namespace or, for `scope: AllNamespaces` in the controller's
 * line-stop namespace, everywhere the controller serves. Deleting it lifts the stop. Rollbacks pass
 * (they restore known-good versions); a hotfix passes with an approval carrying `overrideFreeze` (and
 * its `overrideReason`), which needs the `override-freeze` verb.
 */
export const LineStopSpec = Type.Object({
  reason: Type.String({
    minLength: 1,
    maxLength: 1024,
    description: 'Why the line is stopped (shown on every held plan, in the portal banner and in notifications).',
  }),
  scope: Type.Optional(
    StringEnum(['Namespace', 'AllNamespaces'] as const, {
      default: 'Namespace',
      description:
        "Namespace: plans in this LineStop's namespace. AllNamespaces: plans in every namespace the controller serves; honoured only in the controller's line-stop namespace (lineStop.namespace in its config), elsewhere it stops this namespace only.",
    }),
  ),
  environments: Type.Optional(
    Type.Array(Name('Environment name.'), {
      maxItems: 64,
      description: 'Only plans into these Environments; every Environment when absent.',
    }),
  ),
  stoppedBy: Type.Optional(
    Type.String({
      maxLength: 512,
      description:
        'Who stopped the line. Admission lets a writer name only themselves; the controller records the caller its doors authenticated (API, CLI, MCP, portal, Port, Alertmanager).',
    }),
  ),
  source: Type.Optional(
    Type.Object({
      kind: StringEnum(['Person', 'Alert'] as const),
      alert: Type.Optional(Type.String({ maxLength: 512, description: 'The alert name (alertname label).' })),
      fingerprint: Type.Optional(
        Type.String({ maxLength: 64, description: "Alertmanager's fingerprint of the alert that stopped the line." }),
      ),
    }),
  ),
});

export const LineStopStatus = Type.Object({
  ...StatusBase,
});

export type LineStopSpec = Static<typeof LineStopSpec>;
export type LineStopStatus = Static<typeof LineStopStatus>;
