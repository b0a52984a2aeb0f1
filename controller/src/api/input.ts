import { checkInput, type InputWhere } from '@kpromo/contract';
import type { z } from 'zod';
import { ApiError } from './apiError.js';

/** Parses `value` or throws a 400 naming every bad field, e.g. `invalid query: from: is required`. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, what: InputWhere): z.output<S> {
  const r = checkInput(schema, value, what);
  if (!r.ok) throw new ApiError(400, r.message);
  return r.value;
}
