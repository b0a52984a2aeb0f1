/**
 * A step failure that ends the app (no retry), with a condition-style reason. Delivery methods (and
 * the credential helpers) throw it when retrying cannot help; the step runner records the reason.
 */
export class PermanentAppError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}
