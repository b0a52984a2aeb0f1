import { InputError } from '@backstage/errors';
import { checkInput, type InputWhere } from '@kpromo/plugin-promotions-common';
import type { z } from 'zod';

// The request schemas are the wire contract's (@kpromo/contract): what the backend accepts is
// exactly what the controller accepts.
export {
  ApplicationsQuery,
  ApproveBody,
  CreatePlanBody,
  DiffQuery,
  DoraQuery,
  HistoryQuery,
  NamespaceQuery,
  PlanParams,
  ResourceActionBody,
  RollbackBody,
} from '@kpromo/plugin-promotions-common';

/** Parses input or throws an InputError (400) naming every bad field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, what: InputWhere): z.output<S> {
  const r = checkInput(schema, value, what);
  if (!r.ok) throw new InputError(r.message);
  return r.value;
}
