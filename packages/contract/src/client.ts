// The typed HTTP clients of both APIs, derived from the contract: the route table → the OpenAPI
// documents → openapi-typescript `paths` (src/generated, `yarn openapi`) → openapi-fetch. Paths,
// parameters, bodies and answers are checked at compile time against what the servers mount, so a
// client cannot drift from the route table. Callers add their own credentials and error types.
import createClient, { type Client } from 'openapi-fetch';
import type { paths as BackendPaths } from './generated/backendApi.js';
import type { paths as ControllerPaths } from './generated/controllerApi.js';

export type { BackendPaths, ControllerPaths };
/** The controller's JSON API under /api/v1. */
export type ControllerApi = Client<ControllerPaths>;
/** The Backstage promotions backend under /api/promotions. */
export type BackendApi = Client<BackendPaths>;

type JsonBody<B> = NonNullable<B> extends { content: { 'application/json': infer J } } ? J : never;
/** What a client sends to create a plan (the request body as it travels). */
export type CreatePlanRequest = JsonBody<ControllerPaths['/plans']['post']['requestBody']>;
/** What a client sends to approve a plan. */
export type ApproveOptions = JsonBody<ControllerPaths['/plans/{namespace}/{name}/approve']['post']['requestBody']>;
/** What a client sends to let the next wave of a fleet plan start. */
export type ContinueOptions = JsonBody<ControllerPaths['/plans/{namespace}/{name}/continue']['post']['requestBody']>;

export interface ApiClientOptions {
  /** The API root, e.g. `http://kpromo-controller:8080/api/v1` or the backend's discovery URL. */
  baseUrl: string;
  /** Sent with every request (credentials, the identity acted for). */
  headers?: Record<string, string>;
  /** A different fetch (Backstage's fetchApi in the browser). */
  fetch?: (input: Request) => Promise<Response>;
  /** Aborts every request of this client (e.g. AbortSignal.timeout). */
  signal?: AbortSignal;
}

// Lists travel as one comma-separated value (`applications=a,b`), as the servers parse them.
const querySerializer = { array: { style: 'form', explode: false } } as const;

export function controllerApi(o: ApiClientOptions): ControllerApi {
  return createClient<ControllerPaths>({ ...o, baseUrl: o.baseUrl.replace(/\/+$/, ''), querySerializer });
}

export function backendApi(o: ApiClientOptions): BackendApi {
  return createClient<BackendPaths>({ ...o, baseUrl: o.baseUrl.replace(/\/+$/, ''), querySerializer });
}

/**
 * A non-2xx answer of either API: the status, the error's name when the server gave one (Backstage
 * errors: InputError, NotAllowedError, …) and the server's own message, never a stack trace.
 */
export class ApiCallError extends Error {
  override readonly name = 'ApiCallError';
  constructor(
    readonly status: number,
    message: string,
    readonly errorName?: string,
  ) {
    super(message);
  }
}

/** The server's message from an error body: the controller's `{error}` or Backstage's `{error: {name, message}}`. */
export function errorOf(body: unknown, status: number, statusText = ''): { message: string; name?: string } {
  const e = (body as { error?: unknown } | undefined)?.error;
  if (typeof e === 'string') return { message: e };
  if (e && typeof e === 'object') {
    const { name, message } = e as { name?: unknown; message?: unknown };
    if (typeof message === 'string') return { message, ...(typeof name === 'string' ? { name } : {}) };
  }
  if (typeof body === 'string' && body) return { message: body.slice(0, 300) };
  return { message: statusText || `HTTP ${status}` };
}

/**
 * The answer's data, or an {@link ApiCallError} carrying the server's status and message.
 * A network failure (fetch rejects) propagates as it is, for the caller to report as unreachable.
 */
export async function answer<D>(
  call: Promise<{ data?: D; error?: unknown; response: Response }>,
): Promise<NonNullable<D>> {
  const { data, error, response } = await call;
  if (response.ok) return data as NonNullable<D>;
  const e = errorOf(error, response.status, response.statusText);
  throw new ApiCallError(response.status, e.message, e.name);
}

/** The operationIds of the backend's route table, from its OpenAPI document. */
export type BackendOperationId = keyof import('./generated/backendApi.js').operations;
/** The operationIds of the controller's route table, from its OpenAPI document. */
export type ControllerOperationId = keyof import('./generated/controllerApi.js').operations;
