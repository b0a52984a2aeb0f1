export type OciErrorCode = 'NOT_FOUND' | 'UNAVAILABLE' | 'DIGEST_MISMATCH' | 'UNAUTHORIZED' | 'PROTOCOL';

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

/** Worth retrying the whole operation later (registry down or overloaded). */
export function isTransient(err: unknown): boolean {
  return err instanceof OciError && err.code === 'UNAVAILABLE';
}
