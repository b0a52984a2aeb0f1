/**
 * The emergency lane: an approval with `overrideFreeze` runs a plan through freeze windows and line
 * stops, and must say why in `overrideReason`, at least a sentence. Defined once here: the CRD's CEL
 * rules (promotionPlan.ts), the wire contract (ApproveBody) and the operation every door calls
 * (approvePlan) all judge a reason by these patterns and say the same.
 */

import type { Approval } from './resources/promotionPlan.js';

export const OVERRIDE_REASON_MIN_CHARACTERS = 20;
export const OVERRIDE_REASON_MIN_WORDS = 3;
export const OVERRIDE_REASON_MAX_LENGTH = 1024;

// White space written out, not \s: RE2 (CEL's matches()) and JavaScript read the class alike.
const SPACE = '[\\t\\n\\f\\r ]';
const NOT_SPACE = '[^\\t\\n\\f\\r ]';
/**
 * A reason passes when both match (anywhere, as CEL's matches() does): enough characters from the
 * first that is not white space to the last, and enough words (runs of characters that are not).
 */
export const OVERRIDE_REASON_PATTERNS = [
  `${NOT_SPACE}[\\s\\S]{${OVERRIDE_REASON_MIN_CHARACTERS - 2},}${NOT_SPACE}`,
  Array.from({ length: OVERRIDE_REASON_MIN_WORDS }, () => `${NOT_SPACE}+`).join(`${SPACE}+`),
] as const;

/** What the rule asks for, after the field's name. */
const SENTENCE = `at least a sentence (${OVERRIDE_REASON_MIN_CHARACTERS} characters and ${OVERRIDE_REASON_MIN_WORDS} words, leading and trailing spaces not counted) saying why this approval overrides freeze windows and line stops`;
export const OVERRIDE_REASON_REQUIRED = `is required with overrideFreeze: ${SENTENCE}`;
export const OVERRIDE_REASON_TOO_SHORT = `must be ${SENTENCE}`;
export const OVERRIDE_REASON_WITHOUT_OVERRIDE =
  'is only for an approval with overrideFreeze: true (a note on any approval goes in comment)';

const passes = (reason: string) => OVERRIDE_REASON_PATTERNS.every((p) => new RegExp(p, 'u').test(reason));

/**
 * Pure: what is wrong with an approval's override and its reason, after the field name
 * (`overrideReason ${problem}`); undefined when nothing is. An empty reason counts as none.
 */
export function overrideReasonProblem(a: { overrideFreeze?: boolean; overrideReason?: string }): string | undefined {
  const reason = a.overrideReason ?? '';
  if (!a.overrideFreeze) return reason ? OVERRIDE_REASON_WITHOUT_OVERRIDE : undefined;
  if (!reason.trim()) return OVERRIDE_REASON_REQUIRED;
  return passes(reason) ? undefined : OVERRIDE_REASON_TOO_SHORT;
}

/** A CEL string literal of `s` (single-quoted, backslashes and quotes escaped). */
const celString = (s: string) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

/** The CEL rules of one approval (x-kubernetes-validations), saying what {@link overrideReasonProblem} says. */
export const OVERRIDE_REASON_RULES = [
  {
    rule: '!has(self.overrideFreeze) || !self.overrideFreeze || has(self.overrideReason)',
    message: `overrideReason ${OVERRIDE_REASON_REQUIRED}`,
  },
  {
    rule: `!has(self.overrideReason) || (${OVERRIDE_REASON_PATTERNS.map((p) => `self.overrideReason.matches(${celString(p)})`).join(' && ')})`,
    message: `overrideReason ${OVERRIDE_REASON_TOO_SHORT}`,
  },
  {
    rule: '!has(self.overrideReason) || (has(self.overrideFreeze) && self.overrideFreeze)',
    message: `overrideReason ${OVERRIDE_REASON_WITHOUT_OVERRIDE}`,
  },
];

/**
 * The approval that runs a plan through freeze windows and line stops: the first with
 * overrideFreeze, unless it names another plan (planUID), as the gate judges it
 * (controller/src/policy/approvalPolicy.ts reads it so). What the history, notifications and Events record.
 */
export function overrideApproval(plan: {
  metadata: { uid?: string };
  spec: { approvals?: readonly Approval[] };
}): Approval | undefined {
  const uid = plan.metadata.uid;
  return plan.spec.approvals?.find((a) => a.overrideFreeze && !(a.planUID && uid && a.planUID !== uid));
}

/** How an override reads in Events and notifications: who, and why. */
export const overrideText = (a: Approval) =>
  `overriding freeze windows and line stops: ${a.user}: ${a.overrideReason ?? '(no reason recorded)'}`;
