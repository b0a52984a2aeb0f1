import { InputError } from '@backstage/errors';
import { z } from 'zod';

const k8sName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a Kubernetes object name (lowercase, digits, "-", ".")');
const list = z
  .union([z.string(), z.array(z.string())])
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter(Boolean))
  .pipe(z.array(z.string().min(1)).max(500));
const regex = z
  .string()
  .max(500)
  .refine((s) => {
    try {
      new RegExp(s);
      return true;
    } catch {
      return false;
    }
  }, 'tagPattern is not a valid regular expression');

export const NamespaceQuery = z.object({ namespace: k8sName.optional() }).strict();

export const Filters = {
  namespace: k8sName.optional(),
  flow: k8sName.optional(),
  from: k8sName,
  to: k8sName,
  applications: list.optional(),
  teams: list.optional(),
  tagPattern: regex.optional(),
};

export const DiffQuery = z
  .object(Filters)
  .strict()
  .refine((q) => q.from !== q.to, 'from and to must be different environments');

export const CreatePlanBody = z
  .object({
    ...Filters,
    name: k8sName.optional(),
    matchLabels: z.record(z.string(), z.string()).optional(),
    approve: z.boolean().default(false),
  })
  .strict()
  .refine((q) => q.from !== q.to, 'from and to must be different environments');

export const PlanParams = z.object({ namespace: k8sName, name: k8sName });

/** Approval options; the approver is always the caller (never taken from the body). */
export const ApproveBody = z
  .object({
    overrideFreeze: z.boolean().optional(),
    comment: z.string().max(1024).optional(),
  })
  .strict();

export const RollbackBody = z.object({ name: k8sName.optional(), approve: z.boolean().default(true) }).strict();

export type DiffQuery = z.infer<typeof DiffQuery>;
export type CreatePlanBody = z.input<typeof CreatePlanBody>;
export type RollbackBody = z.input<typeof RollbackBody>;
export type ApproveBody = z.input<typeof ApproveBody>;

/** Parses input or throws a 400 naming every bad field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  const detail = r.error.issues
    .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
  throw new InputError(`invalid ${what}: ${detail}`);
}
