import { type Static, Type } from '@sinclair/typebox';
import { Name, StatusBase, StringEnum, StringMap } from '../schemaHelpers.js';
import { Duration, FreezeWindow } from './policy.js';

/**
 * Which Environments an org rule covers, by the Environment of a flow's stage. Every field given
 * must match; a rule with no field covers every Environment. Environments are governed (changing
 * their tier or labels needs the `govern` verb), so a team cannot move its prod out of a rule.
 */
export const OrgRuleSelector = Type.Object({
  names: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
      maxItems: 64,
      description: 'Environment names or globs (* matches any run of characters), e.g. prod, prod-*.',
    }),
  ),
  tiers: Type.Optional(
    Type.Array(StringEnum(['development', 'preview', 'staging', 'production'] as const), {
      maxItems: 4,
      description: 'Environments of these tiers (spec.tier, development when unset).',
    }),
  ),
  matchLabels: Type.Optional(StringMap('Environments whose metadata.labels carry every one of these.')),
});

/** One platform-wide rule: minimums every flow's stage into a selected Environment inherits. */
export const OrgRule = Type.Object(
  {
    name: Name('Rule name, shown with the plans and flows it applies to.'),
    environments: Type.Optional(OrgRuleSelector),
    approvals: Type.Optional(
      Type.Object(
        {
          minCount: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 10,
              description:
                "At least this many distinct people approve (the stage's approvers.count when higher). A stage with approval: auto needs them too.",
            }),
          ),
          forbidSelfApproval: Type.Optional(
            Type.Boolean({
              description: "Four eyes: the plan's creator never counts as an approver, whatever the stage says.",
            }),
          ),
        },
        { description: 'Approvals every plan into a selected Environment needs at least.' },
      ),
    ),
    requireVerification: Type.Optional(
      Type.Boolean({
        description:
          'The stage must verify with at least one check of its own (stages[].verification.checks); a plan into a stage without one waits (OrgPolicy) until the flow adds one.',
      }),
    ),
    minSoakTime: Type.Optional(
      Duration("Candidates soak at least this long in the previous stage (the stage's requiredSoakTime when longer)."),
    ),
    requireSignatureVerification: Type.Optional(
      Type.Boolean({
        description:
          "The stage's signature policy (stages[].signaturePolicy, else the flow's) must exist with mode Enforce and requireSignature; otherwise a plan into it waits (OrgPolicy) until the flow's is strict enough.",
      }),
    ),
    freezeWindows: Type.Optional(
      Type.Array(FreezeWindow, {
        maxItems: 32,
        description: "Freeze windows added to every selected Environment's and stage's own.",
      }),
    ),
    reason: Type.Optional(
      Type.String({ maxLength: 1024, description: 'Why the rule exists (shown with every plan it holds).' }),
    ),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: 'has(self.approvals) || has(self.requireVerification) || has(self.minSoakTime) || has(self.requireSignatureVerification) || has(self.freezeWindows)',
        message:
          'a rule requires something: approvals, requireVerification, minSoakTime, requireSignatureVerification or freezeWindows',
      },
    ],
  },
);

/**
 * Org-level gates: platform-wide minimums every flow inherits and no team can drop. Honoured only in
 * the controller's org-policy namespace (config orgPolicyNamespace), which only platform admins may
 * write; an OrgPolicy anywhere else is ignored. The effective gate of a stage is the stricter of the
 * flow's and every matching rule's.
 */
export const OrgPolicySpec = Type.Object({
  rules: Type.Array(OrgRule, {
    minItems: 1,
    maxItems: 64,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  }),
});

export const OrgPolicyStatus = Type.Object({
  ...StatusBase,
});

/** One org rule as it applies to a stage: where it is written, what it requires, and what the flow says. */
export const OrgRuleApplied = Type.Object({
  orgPolicy: Type.String({ description: 'The OrgPolicy, <namespace>/<name>.' }),
  rule: Type.String({ description: 'The rule name (spec.rules[].name).' }),
  field: Type.String({ description: 'The OrgPolicy field that requires it, e.g. spec.rules[0].approvals.minCount.' }),
  requires: Type.String({ description: 'What the rule requires, in words.' }),
  flowHas: Type.String({ description: "What the flow's stage has itself, in words." }),
  stricter: Type.Boolean({
    description: "The rule is stricter than the flow's own stage: it decides (the flow is weaker and is not changed).",
  }),
  unmet: Type.Optional(
    Type.Boolean({
      description:
        "Only the flow's owners can meet it (a verification check, a signature policy): plans into the stage wait (reason OrgPolicy) until they do.",
    }),
  ),
});

/**
 * One org rule covering an Environment, as the controller writes it into the Environment's status
 * (status.orgRules): the minimums the admission policy kpromo-org-policy compares the stage of a
 * PromotionFlow into this Environment against. Admission sees the flow and one parameter, never the
 * Environment's tier or labels a rule selects by, so the controller resolves the selection here.
 */
export const OrgRuleCovering = Type.Object({
  orgPolicy: Type.String({ maxLength: 512, description: 'The OrgPolicy, <namespace>/<name>.' }),
  rule: Type.String({ maxLength: 253, description: 'The rule name (spec.rules[].name).' }),
  index: Type.Integer({
    minimum: 0,
    maximum: 63,
    description: 'Its index in spec.rules, for the field a refusal names.',
  }),
  approvals: Type.Optional(OrgRule.properties.approvals),
  requireVerification: Type.Optional(OrgRule.properties.requireVerification),
  minSoakTime: Type.Optional(OrgRule.properties.minSoakTime),
  requireSignatureVerification: Type.Optional(OrgRule.properties.requireSignatureVerification),
});

export type OrgRuleSelector = Static<typeof OrgRuleSelector>;
export type OrgRule = Static<typeof OrgRule>;
export type OrgPolicySpec = Static<typeof OrgPolicySpec>;
export type OrgPolicyStatus = Static<typeof OrgPolicyStatus>;
export type OrgRuleApplied = Static<typeof OrgRuleApplied>;
export type OrgRuleCovering = Static<typeof OrgRuleCovering>;
