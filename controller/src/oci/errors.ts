export type OciErrorCode =
  | 'NOT_FOUND'
  | 'UNAVAILABLE'
  | 'DIGEST_MISMATCH'
  | 'UNAUTHORIZED'
  | 'PROTOCOL'
  | 'EGRESS_BLOCKED';

/** Every registry failure the controller can act on: the code drives retry/condition logic, the message is for humans. */
export class OciError extends Error {
  override name = 'OciError';
  constructor(
    public code: OciErrorCode,
    public registry: string,
    public repository: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${registry}/${repository}: ${message}`, options);
  }
}

/**
 * A registry request (the registry host, its token service or a redirect) the egress guard refused:
 * the address is not allowed by config `egress.allowedCidrs`. Permanent: a retry cannot help until the
 * config (or the registry) changes; recorded with reason `EgressBlocked`.
 */
export class RegistryEgressBlocked extends OciError {
  override name = 'EgressBlocked';
  readonly permanent = true;
  constructor(registry: string, repository: string, message: string, options?: { cause?: unknown }) {
    super('EGRESS_BLOCKED', registry, repository, message, options);
  }
}

/** Worth retrying the whole operation later (registry down or overloaded). */
export function isTransient(err: unknown): boolean {
  return err instanceof OciError && err.code === 'UNAVAILABLE';
}
