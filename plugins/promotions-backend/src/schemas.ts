import { InputError } from '@backstage/errors';
import { checkInput, type InputWhere, namespaceProblem } from '@kpromo/plugin-promotions-common';
import type { z } from 'zod';

// The request schemas are the wire contract's (@kpromo/contract): what the backend accepts is
// exactly what the controller accepts.
export {
  AdoptBody,
  ApplicationsQuery,
  ApproveBody,
  ContinueBody,
  CreatePlanBody,
  DiffQuery,
  DoraQuery,
  HistoryQuery,
  LineStopParams,
  NamespaceQuery,
  PlanParams,
  ResourceActionBody,
  RollbackBody,
  StopLineBody,
} from '@kpromo/plugin-promotions-common';

/**
 * Parses input or throws an InputError (400) naming every bad field. A `namespace` must besides be
 * a namespace name (an RFC 1123 label, {@link requireNamespace}): the contract accepts object names
 * there (dots, 253 characters), which could name a host to a per-namespace controller locator.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, what: InputWhere): z.output<S> {
  const r = checkInput(schema, value, what);
  if (!r.ok) throw new InputError(r.message);
  const ns = (r.value as { namespace?: unknown } | undefined)?.namespace;
  if (ns !== undefined) requireNamespace(ns, what);
  return r.value;
}

/** Throws an InputError (400) unless `namespace` is a Kubernetes namespace name (RFC 1123 label). */
export function requireNamespace(namespace: unknown, what?: string): asserts namespace is string {
  const problem = namespaceProblem(namespace);
  if (problem) throw new InputError(what ? `invalid ${what}: ${problem}` : problem);
}
