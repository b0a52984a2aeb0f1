import { OVERRIDE_REASON_MAX_LENGTH, overrideReasonProblem } from '@kpromo/api';
import { z } from 'zod';
import { MAX_PATTERN_LENGTH, tagPatternProblem } from './pattern.js';

/**
 * Inputs of the kpromo HTTP API, defined once for every door: the controller's /api/v1 routes, the
 * Backstage backend (/api/promotions), the CLI and the MCP tools parse requests with these, so a
 * request one door accepts is never refused by the next. A request that does not fit is refused
 * before any work, naming every bad field. Unknown fields are dropped: identity (an `approvedBy`,
 * a `requestedBy`) never comes from a body. Empty strings and null count as absent.
 */

/** A Kubernetes object name (RFC 1123 subdomain). */
export const K8S_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const NAME_MESSAGE = 'must be a Kubernetes object name (lowercase letters, digits, "-" and ".", at most 253)';
/** A label key: optional DNS prefix and "/", then a name of at most 63 characters. */
export const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
export const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** Most applications one page of GET /applications returns (`limit`). */
export const MAX_PAGE_SIZE = 1000;
/**
 * Skipped applications a diff or plan answer lists by default (their counts per reason are always
 * complete): at thousands of applications most are up to date, and listing them all costs
 * megabytes per answer.
 */
export const DEFAULT_SKIPPED_SHOWN = 100;
export const MAX_SKIPPED_SHOWN = 10_000;

const requiredString = (what = 'a string') =>
  z.string({ error: (iss) => (iss.input === undefined ? 'is required' : `must be ${what}`) });
export const k8sName = requiredString('a Kubernetes object name').max(253, NAME_MESSAGE).regex(K8S_NAME, NAME_MESSAGE);

const absent = (v: unknown) => (v === '' || v === null ? undefined : v);
const optional = <T extends z.ZodType>(s: T) => z.preprocess(absent, s.optional());
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const pattern = (re: RegExp, what: string) => requiredString(what).regex(re, `must be ${what}`);
/** An optional whole number in [min, max], from JSON or a query string. */
const wholeNumber = (min: number, max: number) =>
  optional(
    z.coerce
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(min, `must be at least ${min}`)
      .max(max, `must be at most ${max}`),
  );

/** Names or globs: a JSON list, a comma-separated string, or (query) a repeated parameter. */
const nameList = z.preprocess(
  (v) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : absent(v),
  z
    .array(z.string({ error: 'entries must be strings' }).max(512, 'entries must be at most 512 characters'), {
      error: 'must be a list of strings or a comma-separated string',
    })
    .max(500, 'at most 500 entries')
    .optional(),
);

/** RE2 syntax (linear-time matching), checked with the same engine the controller matches with. */
const tagPattern = optional(
  z
    .string({ error: 'must be a string' })
    .max(MAX_PATTERN_LENGTH, `regular expression longer than ${MAX_PATTERN_LENGTH} characters`)
    .superRefine((p, ctx) => {
      const problem = tagPatternProblem(p, 'tagPattern');
      if (problem) ctx.addIssue({ code: 'custom', message: problem.replace(/^tagPattern: /, '') });
    }),
);

/** JSON booleans; in a query string also "true"/"false". */
const flag = optional(
  z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean({ error: 'must be true or false' })),
);

const matchLabels = optional(
  z.record(
    z.string().regex(LABEL_KEY, 'keys must be label keys such as app.kubernetes.io/name'),
    z.string({ error: 'values must be strings' }).regex(LABEL_VALUE, 'values must be label values (at most 63)'),
    { error: 'must be an object of label keys to values' },
  ),
);

const filters = {
  namespace: optional(k8sName),
  flow: optional(k8sName),
  from: z.preprocess(absent, k8sName),
  to: z.preprocess(absent, k8sName),
  applications: nameList,
  teams: nameList,
  tagPattern,
  /** How many skipped applications to list (actionable reasons first); counts cover them all. */
  skippedLimit: wholeNumber(0, MAX_SKIPPED_SHOWN),
};

const differentStages = <T extends { from: string; to: string }>(q: T) => q.from !== q.to;
const DIFFERENT = { message: 'from and to must be different environments', path: ['to'] };

export const NamespaceQuery = z.object({ namespace: optional(k8sName) });

/**
 * GET /applications: everything the caller may list (no `limit`), or one page of at most `limit`
 * in namespace/name order with a `continue` token for the next, as the Kubernetes API pages lists.
 * Filters apply before paging.
 */
export const ApplicationsQuery = z.object({
  namespace: optional(k8sName),
  limit: wholeNumber(1, MAX_PAGE_SIZE),
  continue: optional(z.string({ error: 'must be a string' }).max(1024, 'is not a continue token')),
  /** Owning teams (spec.owner); names or globs. */
  teams: nameList,
  /** Application names or globs. */
  applications: nameList,
  /** Equality label selector, `key=value,key2=value2` (metadata and spec labels). */
  labelSelector: optional(
    z
      .string({ error: 'must be a string' })
      .max(1024, 'must be at most 1024 characters')
      .transform((s, ctx) => {
        const out: Record<string, string> = {};
        for (const part of s
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean)) {
          const m = /^([^=!]+)==?(.*)$/.exec(part);
          if (!m || !LABEL_KEY.test(m[1].trim()) || !LABEL_VALUE.test(m[2].trim())) {
            ctx.addIssue({ code: 'custom', message: `"${part}" is not key=value (only equality selectors)` });
            return z.NEVER;
          }
          out[m[1].trim()] = m[2].trim();
        }
        return out;
      }),
  ),
});

export const DiffQuery = z.object(filters).refine(differentStages, DIFFERENT);

/**
 * What a create-and-approve request's `expect` must hold, said wherever one is missing: the
 * candidates are computed when the request arrives, so without the digests the caller reviewed a
 * deploy to the source between the view and the click would be approved unseen.
 */
export const EXPECT_REQUIRED =
  'is required with approve: send, per application, the digest you reviewed ({"<application>": "sha256:..."}, each candidate\'s from.digest in GET /diff); the plan is approved only if the candidates are exactly those';
/** An image manifest digest, as candidates carry it. */
const DIGEST = /^sha256:[a-f0-9]{64}$/;

/**
 * Per application, the source digest the caller reviewed (GET /diff's candidates[].from.digest).
 * With it the plan is created only if the candidates computed now are exactly these (409 otherwise).
 */
const expectDigests = optional(
  z
    .record(
      z.string().max(253, NAME_MESSAGE).regex(K8S_NAME, `application names ${NAME_MESSAGE}`),
      z.string({ error: 'digests must be strings' }).regex(DIGEST, 'digests must be sha256:<64 hex digits>'),
      { error: 'must be an object of application name to digest' },
    )
    .refine((r) => Object.keys(r).length <= 5000, 'at most 5000 applications'),
);

export const CreatePlanBody = z
  .object({ ...filters, name: optional(k8sName), matchLabels, approve: flag, expect: expectDigests })
  .refine(differentStages, DIFFERENT)
  .refine((b) => b.approve !== true || b.expect !== undefined, { path: ['expect'], message: EXPECT_REQUIRED });

/** A note kept with an approval or a continuation. */
const comment = optional(z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters'));
/**
 * What an approval's `uid` must hold, said by every door that refuses one without it: approving by
 * name alone would approve whatever plan holds the name when the request arrives.
 */
export const UID_REQUIRED =
  'is required: send the metadata.uid of the plan you reviewed (GET /plans/{namespace}/{name}, `kpromo plan get <name> -o json`, or the uid returned when it was created); the approval binds to that plan';

/**
 * metadata.uid of the plan the caller was shown. A plan's content never changes under its uid, so
 * what the caller adds binds to exactly that plan; another uid (the plan was deleted and created
 * again under the same name) is a 409.
 */
const uidString = z
  .string({ error: (iss) => (iss.input === undefined ? UID_REQUIRED : 'must be a string') })
  .regex(/^[0-9a-fA-F-]{1,64}$/, 'must be the plan metadata.uid you reviewed (hex digits and dashes)');
const reviewedUid = optional(uidString);

export const ApproveBody = z
  .object({
    /** Emergency: run despite a freeze window or a line stop (needs the override-freeze verb and overrideReason). */
    overrideFreeze: flag,
    /** Why, required with overrideFreeze: at least a sentence (packages/api/src/overrideReason.ts). */
    overrideReason: optional(
      z
        .string({ error: 'must be a string' })
        .max(OVERRIDE_REASON_MAX_LENGTH, `must be at most ${OVERRIDE_REASON_MAX_LENGTH} characters`),
    ),
    comment,
    /** Required: an approval binds to the plan reviewed, never to a name. */
    uid: z.preprocess(absent, uidString),
  })
  .superRefine((b, ctx) => {
    const problem = overrideReasonProblem(b);
    if (problem) ctx.addIssue({ code: 'custom', path: ['overrideReason'], message: problem });
  });

/**
 * Lets the next wave of a fleet plan start after a wave with `pause` (spec.continuations; RBAC verb
 * continue). The user recorded is the authenticated caller, never a body field.
 */
export const ContinueBody = z.object({
  /** The wave to let start (status.waves[].name); default: the wave that is Waiting. */
  wave: optional(pattern(DNS_LABEL, 'a wave name (a DNS label: lower-case letters, digits and "-", at most 63)')),
  comment,
  uid: reviewedUid,
});

/**
 * `approve` defaults to false: a rollback needs its own approval unless the caller asks for it
 * here, and then names the plan to roll back as the caller reviewed it (`uid`, required with
 * approve): a plan deleted and created again under the name since is not rolled back (409). `name`
 * names the rollback plan; by default the apiserver generates one (`<plan>-rollback-<random>`),
 * returned in the response.
 */
export const RollbackBody = z
  .object({ approve: flag, name: optional(k8sName), uid: reviewedUid })
  .refine((b) => b.approve !== true || b.uid !== undefined, { path: ['uid'], message: UID_REQUIRED });

export const PlanParams = z.object({ namespace: k8sName, name: k8sName });

/** Most bytes of JSON a resource action's `spec` may hold. */
export const MAX_RESOURCE_SPEC_BYTES = 256 * 1024;
/** An API group of a custom resource: a DNS subdomain with at least one dot (the core group has none). */
const API_GROUP = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;
const API_VERSION_NAME = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;

/**
 * One write to one custom resource of a kind the controller opens to this route (its
 * `resourceKinds`): create it, merge `spec` into it, or delete it. Only `spec` comes from the body:
 * apiVersion and kind come from the apiserver's discovery, metadata is name and namespace alone
 * (no labels, annotations, finalizers or owner references).
 */
export const ResourceActionBody = z.object({
  operation: z.enum(['create', 'update', 'delete'], { error: 'must be create, update or delete' }),
  group: pattern(API_GROUP, 'an API group with a dot (custom resources only)'),
  version: pattern(API_VERSION_NAME, 'an API version such as v1 or v1beta1'),
  plural: pattern(DNS_LABEL, "a resource's plural name"),
  namespace: pattern(DNS_LABEL, 'a namespace name'),
  name: k8sName,
  spec: optional(
    z
      .record(z.string(), z.unknown(), { error: 'must be a JSON object' })
      .refine(
        (s) => new TextEncoder().encode(JSON.stringify(s)).length <= MAX_RESOURCE_SPEC_BYTES,
        `must be at most ${MAX_RESOURCE_SPEC_BYTES} bytes of JSON`,
      ),
  ),
});

/**
 * POST /adopt: discovery of what runs in a flow's Environments and the Applications proposed for
 * it. Nothing is written: the answer is YAML to review and apply (a pull request, kubectl).
 */
export const AdoptBody = z.object({
  namespace: optional(k8sName),
  /** The flow adopted into; the namespace's only flow when absent. */
  flow: optional(k8sName),
  /** Applications to propose, by name (from an earlier answer's candidates); all when absent. */
  applications: optional(
    z.array(k8sName, { error: 'must be a list of Application names' }).max(500, 'at most 500 entries'),
  ),
  /** Owning team where no workload label names one. */
  owner: optional(pattern(DNS_LABEL, 'a team name (a DNS label)')),
  /** The workload label that names the owning team (default `team`). */
  ownerLabel: optional(
    requiredString('a label key').regex(LABEL_KEY, 'must be a label key such as team or example.com/team'),
  ),
});
export type AdoptBody = z.output<typeof AdoptBody>;

export type NamespaceQuery = z.output<typeof NamespaceQuery>;
export type ApplicationsQuery = z.output<typeof ApplicationsQuery>;
export type ApplicationsQueryInput = z.input<typeof ApplicationsQuery>;
export type DiffQuery = z.output<typeof DiffQuery>;
export type CreatePlanBody = z.output<typeof CreatePlanBody>;
/** POST /linestops: stop the line. The recorded stopper is the authenticated caller, never a body field. */
export const StopLineBody = z.object({
  namespace: optional(k8sName),
  name: optional(pattern(DNS_LABEL, 'a DNS label (lower-case letters, digits and "-", at most 63)')),
  reason: requiredString()
    .trim()
    .min(1, 'must say why the line stops (it is shown on every held plan)')
    .max(1024, 'must be at most 1024 characters'),
  scope: optional(z.enum(['Namespace', 'AllNamespaces'], { error: 'must be Namespace or AllNamespaces' })),
  environments: optional(
    z.array(k8sName, { error: 'must be a list of Environment names' }).max(64, 'at most 64 entries'),
  ),
});
export const LineStopParams = z.object({ namespace: k8sName, name: k8sName });

/** Prometheus label names and values as Alertmanager sends them (bounded: a body is attacker-written). */
const alertLabels = z.record(
  z.string().max(256, 'label names must be at most 256 characters'),
  z.string({ error: 'label values must be strings' }).max(4096, 'label values must be at most 4096 characters'),
  { error: 'must be an object of strings' },
);
/**
 * POST /alertmanager: Alertmanager's webhook notification (version 4), the fields kpromo reads. A
 * configured route sends alerts labelled kpromo_stop_line="true" here (docs/line-stop.md), and the
 * alerts that restart soaks (stages[].soak.resetOn, docs/verification.md).
 */
export const AlertmanagerWebhookBody = z.object({
  version: optional(z.string().max(16)),
  status: optional(z.enum(['firing', 'resolved'], { error: 'must be firing or resolved' })),
  receiver: optional(z.string().max(256)),
  alerts: z
    .array(
      z.object({
        status: z.enum(['firing', 'resolved'], { error: 'must be firing or resolved' }),
        labels: alertLabels,
        annotations: optional(alertLabels),
        fingerprint: pattern(/^[0-9a-fA-F]{1,32}$/, "Alertmanager's fingerprint (hex digits)"),
        // With the fingerprint, which firing of the alert a notification is about (a repeat has the same).
        startsAt: optional(z.string().max(64, 'startsAt must be at most 64 characters')),
      }),
      { error: 'must be a list of alerts' },
    )
    .max(1000, 'at most 1000 alerts per notification'),
});

export type ApproveBody = z.output<typeof ApproveBody>;
export type ContinueBody = z.output<typeof ContinueBody>;
export type RollbackBody = z.output<typeof RollbackBody>;
export type PlanParams = z.output<typeof PlanParams>;
export type StopLineBody = z.output<typeof StopLineBody>;
export type AlertmanagerWebhookBody = z.output<typeof AlertmanagerWebhookBody>;
export type ResourceActionBody = z.output<typeof ResourceActionBody>;

export type InputWhere = 'query' | 'request body' | 'path' | 'plan reference' | 'arguments';

/** The reason `value` does not fit `schema` (every bad field, at most 10), or the parsed value. */
export function checkInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: InputWhere,
): { ok: true; value: z.output<S> } | { ok: false; message: string } {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value)))
    return { ok: false, message: `invalid ${what}: must be a JSON object` };
  const r = schema.safeParse(value ?? {});
  if (r.success) return { ok: true, value: r.data };
  const detail = r.error.issues
    .slice(0, 10)
    .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
  return { ok: false, message: `invalid ${what}: ${detail}` };
}

// ---- release history and DORA insights ----

/** Most entries one page of GET /history returns (`limit`). */
export const MAX_HISTORY_PAGE = 1000;
/** Longest DORA window GET /insights/dora accepts, in days. */
export const MAX_DORA_WINDOW_DAYS = 365;

const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;
const UNIT_SECONDS: Record<string, number> = { m: 60, h: 3600, d: 86_400, w: 604_800 };
const startOfUtcDay = (t: number) => t - (t % 86_400_000);

/**
 * Pure: the instant a time expression names, or undefined when it is none of the forms:
 * an RFC 3339 date-time (`2026-12-01T09:00:00Z`) or date (`2026-12-01`, midnight UTC); a duration
 * ago (`30m`, `12h`, `7d`, `2w`); `today` / `yesterday` (midnight UTC); a weekday (`monday`: the
 * most recent one at midnight UTC, today when it is that day). Days are UTC days.
 */
export function parseTimeExpression(expr: string, now: Date): Date | undefined {
  const s = expr.trim().toLowerCase();
  const rel = /^(\d{1,6})([mhdw])$/.exec(s);
  if (rel) return new Date(now.getTime() - Number(rel[1]) * UNIT_SECONDS[rel[2]] * 1000);
  const today = startOfUtcDay(now.getTime());
  if (s === 'today') return new Date(today);
  if (s === 'yesterday') return new Date(today - 86_400_000);
  const day = WEEKDAYS.indexOf(s as (typeof WEEKDAYS)[number]);
  if (day >= 0) return new Date(today - ((now.getUTCDay() - day + 7) % 7) * 86_400_000);
  if (/^\d{4}-\d{2}-\d{2}$/.test(s)) {
    const t = Date.parse(`${s}T00:00:00Z`);
    return Number.isNaN(t) ? undefined : new Date(t);
  }
  if (/^\d{4}-\d{2}-\d{2}t\d{2}:\d{2}(:\d{2}(\.\d+)?)?(z|[+-]\d{2}:\d{2})$/.test(s)) {
    const t = Date.parse(s.toUpperCase());
    return Number.isNaN(t) ? undefined : new Date(t);
  }
  return undefined;
}

/** A time expression ({@link parseTimeExpression}), parsed when the request is: an RFC 3339 date-time. */
const timeExpression = (description: string) =>
  optional(
    z
      .string({ error: 'must be a string' })
      .max(64, 'must be at most 64 characters')
      .transform((s, ctx) => {
        const d = parseTimeExpression(s, new Date());
        if (d) return d.toISOString();
        ctx.addIssue({
          code: 'custom',
          message:
            'must be a date (2026-12-01), an RFC 3339 date-time, a duration ago (7d, 12h) or today/yesterday/monday…',
        });
        return z.NEVER;
      }),
  ).describe(
    `${description}: a date (2026-12-01), an RFC 3339 date-time, a duration ago (30m, 12h, 7d, 2w), today, yesterday or a weekday (monday: the most recent one); days are UTC.`,
  );

const historyFilters = {
  namespace: optional(k8sName),
  application: optional(k8sName),
  environment: optional(k8sName),
  flow: optional(k8sName),
  /** Owning team of the application (spec.owner when the entry was recorded). */
  team: optional(z.string({ error: 'must be a string' }).min(1).max(253, 'must be at most 253 characters')),
};

/**
 * GET /history: promotions and rollbacks per application and environment, newest first, one page of
 * at most `limit` (default 100) with a `continue` token for the next. `since`/`until` bound when an
 * entry finished ({@link parseTimeExpression} forms).
 */
export const HistoryQuery = z.object({
  ...historyFilters,
  since: timeExpression('Entries that finished at or after this time'),
  until: timeExpression('Entries that finished before this time'),
  limit: wholeNumber(1, MAX_HISTORY_PAGE),
  continue: optional(z.string({ error: 'must be a string' }).max(1024, 'is not a continue token')),
});

/** GET /insights/dora: the four keys over `window` days (default 30) ending `until` (default now). */
export const DoraQuery = z.object({
  ...historyFilters,
  window: optional(
    z
      .string({ error: 'must be a string' })
      .regex(/^\d{1,3}d$/, 'must be a number of days, e.g. 30d')
      .transform((s) => Number(s.slice(0, -1)))
      .refine((n) => n >= 1 && n <= MAX_DORA_WINDOW_DAYS, `must be 1d to ${MAX_DORA_WINDOW_DAYS}d`),
  ).describe('Days the window covers, e.g. 30d (the default), at most 365d.'),
  until: timeExpression('End of the window (default now)'),
});

export type HistoryQuery = z.output<typeof HistoryQuery>;
export type HistoryQueryInput = z.input<typeof HistoryQuery>;
export type DoraQuery = z.output<typeof DoraQuery>;
export type DoraQueryInput = z.input<typeof DoraQuery>;

// ---- plans list ----

/** Most plans one page of GET /plans returns (`limit`). */
export const MAX_PLAN_PAGE = 1000;
/** Plan phases GET /plans filters on; `active` is every plan not final yet. */
export const PLAN_PHASE_FILTERS = [
  'active',
  'Pending',
  'Promoting',
  'Complete',
  'Incomplete',
  'Failed',
  'RolledBack',
] as const;

/**
 * GET /plans: newest first (creation time). Without `limit` every plan matching the filters; with it
 * one page and a `continue` token for the next. Filters apply before paging.
 */
export const PlansQuery = z.object({
  namespace: optional(k8sName),
  flow: optional(k8sName),
  /** The environment the plan changes (spec.to). */
  environment: optional(k8sName),
  phase: optional(z.enum(PLAN_PHASE_FILTERS, { error: `must be one of ${PLAN_PHASE_FILTERS.join(', ')}` })),
  action: optional(z.enum(['promote', 'rollback'], { error: 'must be promote or rollback' })),
  /** A name or glob: plans that promote (or roll back) a matching application. */
  application: optional(
    z.string({ error: 'must be a string' }).max(253, 'must be at most 253 characters').describe('Name or glob.'),
  ),
  /** Part of spec.requestedBy, case-insensitive (e.g. `guest` for user:development/guest). */
  requestedBy: optional(z.string({ error: 'must be a string' }).max(253, 'must be at most 253 characters')),
  limit: wholeNumber(1, MAX_PLAN_PAGE),
  continue: optional(z.string({ error: 'must be a string' }).max(1024, 'is not a continue token')),
});

export type PlansQuery = z.output<typeof PlansQuery>;
export type PlansQueryInput = z.input<typeof PlansQuery>;
