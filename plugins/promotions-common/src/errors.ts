import {
  AuthenticationError,
  ConflictError,
  InputError,
  NotAllowedError,
  NotFoundError,
  ServiceUnavailableError,
} from '@backstage/errors';
import { ApiCallError } from '@kpromo/contract';

const BY_NAME: Record<string, new (message: string) => Error> = {
  InputError,
  AuthenticationError,
  NotAllowedError,
  NotFoundError,
  ConflictError,
  ServiceUnavailableError,
};

/**
 * A failed call of the controller or backend API (the typed clients of @kpromo/contract) as the
 * Backstage error that every router maps to its status: the server's error name when it gave one
 * (the backend's own answers), else its status; the server's message kept. `server` names who
 * answered, for the errors that are not the caller's fault (unreachable, 401 of our own token, 5xx).
 */
export function toBackstageError(e: unknown, server: string, credentialsHint?: string): Error {
  if (!(e instanceof ApiCallError))
    return new ServiceUnavailableError(`${server} unreachable: ${e instanceof Error ? e.message : String(e)}`);
  const Named = e.errorName ? BY_NAME[e.errorName] : undefined;
  if (Named) return new Named(e.message);
  switch (e.status) {
    case 400:
      return new InputError(e.message);
    case 401:
      return new AuthenticationError(
        `${server} refused the backend's credentials${credentialsHint ? ` (${credentialsHint})` : ''}: ${e.message}`,
      );
    case 403:
      return new NotAllowedError(e.message);
    case 404:
      return new NotFoundError(e.message);
    case 409:
      return new ConflictError(e.message);
    default:
      return new ServiceUnavailableError(`${server} answered ${e.status}: ${e.message}`);
  }
}
