import { z } from 'zod';
import { ApiError } from '../api/context.js';
import { MAX_PATTERN_LENGTH, tagPatternProblem } from '../candidates/pattern.js';

/**
 * Input schemas of the HTTP API (one per route body, query and path): a request that does not fit
 * is a 400 naming every bad field, before any work or write. Unknown fields are ignored (identity,
 * e.g. an `approvedBy`, never comes from the body); empty strings and null count as absent, as the
 * API always treated them.
 */

const K8S_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const NAME_MESSAGE = 'must be a Kubernetes object name (lowercase letters, digits, "-" and ".", at most 253)';
/** A label key: optional DNS prefix and "/", then a name of at most 63 characters. */
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

const requiredString = (what = 'a string') =>
  z.string({ error: (iss) => (iss.input === undefined ? 'is required' : `must be ${what}`) });
const k8sName = requiredString('a Kubernetes object name').max(253, NAME_MESSAGE).regex(K8S_NAME, NAME_MESSAGE);

const absent = (v: unknown) => (v === '' || v === null ? undefined : v);
const optional = <T extends z.ZodType>(s: T) => z.preprocess(absent, s.optional());

/** Names or globs: a JSON list, a comma-separated string, or (query) a repeated parameter. */
const nameList = z.preprocess(
  (v) => (typeof v === 'string' ? v.split(',').filter(Boolean) : absent(v)),
  z
    .array(z.string({ error: 'entries must be strings' }).max(512, 'entries must be at most 512 characters'), {
      error: 'must be a list of strings or a comma-separated string',
    })
    .max(500, 'at most 500 entries')
    .optional(),
);

const tagPattern = optional(
  z
    .string({ error: 'must be a string' })
    .max(MAX_PATTERN_LENGTH, `regular expression longer than ${MAX_PATTERN_LENGTH} characters`)
    .superRefine((p, ctx) => {
      const problem = tagPatternProblem(p, 'tagPattern');
      if (problem) ctx.addIssue({ code: 'custom', message: problem.replace(/^tagPattern: /, '') });
    }),
);

const flag = optional(z.boolean({ error: 'must be true or false' }));

const filters = {
  namespace: optional(k8sName),
  flow: optional(k8sName),
  from: z.preprocess(absent, k8sName),
  to: z.preprocess(absent, k8sName),
  applications: nameList,
  teams: nameList,
  tagPattern,
};

export const NamespaceQuery = z.object({ namespace: optional(k8sName) });

export const DiffQuery = z.object(filters);

export const CreatePlanBody = z.object({
  ...filters,
  name: optional(k8sName),
  matchLabels: optional(
    z.record(
      z.string().regex(LABEL_KEY, 'keys must be label keys such as app.kubernetes.io/name'),
      z.string({ error: 'values must be strings' }).regex(LABEL_VALUE, 'values must be label values (at most 63)'),
      { error: 'must be an object of label keys to values' },
    ),
  ),
  approve: flag,
});

export const ApproveBody = z.object({
  overrideFreeze: flag,
  comment: optional(z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters')),
});

export const RollbackBody = z.object({ approve: flag, name: optional(k8sName) });

export const PlanParams = z.object({ ns: k8sName, name: k8sName });

/** Parses `value` or throws a 400 naming every bad field, e.g. `invalid query: from: is required`. */
export function parseInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: 'query' | 'request body' | 'path',
): z.output<S> {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value)))
    throw new ApiError(400, `invalid ${what}: must be a JSON object`);
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  const detail = r.error.issues
    .slice(0, 10)
    .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
  throw new ApiError(400, `invalid ${what}: ${detail}`);
}
