import { z } from 'zod';
import { MAX_PATTERN_LENGTH, tagPatternProblem } from './pattern.js';

/**
 * Inputs of the kpromo HTTP API, defined once for every door: the controller's /api/v1 routes, the
 * Backstage backend (/api/promotions), the CLI and the MCP tools parse requests with these, so a
 * request one door accepts is never refused by the next. A request that does not fit is refused
 * before any work, naming every bad field. Unknown fields are dropped: identity (an `approvedBy`,
 * a `requestedBy`) never comes from a body. Empty strings and null count as absent.
 */

const K8S_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const NAME_MESSAGE = 'must be a Kubernetes object name (lowercase letters, digits, "-" and ".", at most 253)';
/** A label key: optional DNS prefix and "/", then a name of at most 63 characters. */
export const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
export const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** Most applications one page of GET /applications returns (`limit`). */
export const MAX_PAGE_SIZE = 1000;

const requiredString = (what = 'a string') =>
  z.string({ error: (iss) => (iss.input === undefined ? 'is required' : `must be ${what}`) });
export const k8sName = requiredString('a Kubernetes object name').max(253, NAME_MESSAGE).regex(K8S_NAME, NAME_MESSAGE);

const absent = (v: unknown) => (v === '' || v === null ? undefined : v);
const optional = <T extends z.ZodType>(s: T) => z.preprocess(absent, s.optional());

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
  limit: optional(
    z.coerce
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(MAX_PAGE_SIZE, `must be at most ${MAX_PAGE_SIZE}`),
  ),
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

export const CreatePlanBody = z
  .object({ ...filters, name: optional(k8sName), matchLabels, approve: flag })
  .refine(differentStages, DIFFERENT);

export const ApproveBody = z.object({
  /** Emergency: run despite a freeze window (needs the override-freeze verb). */
  overrideFreeze: flag,
  comment: optional(z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters')),
});

/** `approve` defaults to false: a rollback needs its own approval unless the caller asks for it here. */
export const RollbackBody = z.object({ approve: flag, name: optional(k8sName) });

export const PlanParams = z.object({ namespace: k8sName, name: k8sName });

export type NamespaceQuery = z.output<typeof NamespaceQuery>;
export type ApplicationsQuery = z.output<typeof ApplicationsQuery>;
export type ApplicationsQueryInput = z.input<typeof ApplicationsQuery>;
export type DiffQuery = z.output<typeof DiffQuery>;
export type CreatePlanBody = z.output<typeof CreatePlanBody>;
/** What a client sends to create a plan. */
export type CreatePlanRequest = z.input<typeof CreatePlanBody> & { from: string; to: string };
export type ApproveBody = z.output<typeof ApproveBody>;
export type ApproveOptions = z.input<typeof ApproveBody>;
export type RollbackBody = z.output<typeof RollbackBody>;
export type PlanParams = z.output<typeof PlanParams>;

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
