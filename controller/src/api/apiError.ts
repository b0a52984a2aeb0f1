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
