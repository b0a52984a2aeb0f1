/** `_meta` key of a refused or failed tool call: the HTTP status the operation answered (ApiError), e.g. 409. */
export const STATUS_META = 'kpromo.dev/status';
