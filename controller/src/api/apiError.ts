import { KubeError } from '../kube/rest.js';

/** An API error with an HTTP-ish status, so every front end can map it the same way. */
export class ApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 500 | 503,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * Maps a refused Kubernetes write to the API error every door reports, prefixed with what was
 * attempted (e.g. "cannot approve team-a/plan-1"): the apiserver's reason without its request line.
 * Anything else (a network failure, a bug) is rethrown for the door's 500 handler.
 */
export function kubeWriteError(e: unknown, what: string): never {
  if (e instanceof KubeError) {
    const { status } = e;
    const why = e.message.replace(/^.*?failed \(\d+ [^)]*\): /, '');
    if (status === 403) throw new ApiError(403, `${what}: ${why}`);
    if (status === 404) throw new ApiError(404, `${what}: not found`);
    if (status === 409) throw new ApiError(409, `${what}: ${why}`);
    if (status === 400 || status === 422) throw new ApiError(400, `${what}: ${why}`);
  }
  throw e;
}
