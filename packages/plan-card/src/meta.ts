/** `_meta` key of a refused or failed tool call: the HTTP status the operation answered (ApiError), e.g. 409. */
export const STATUS_META = 'kpromo.dev/status';

/**
 * The plan can take an approval: not approved by its policy yet, not started. A plan the controller
 * has not looked at yet (no status) is Pending too, and an approval counts for it.
 */
export const awaitsApproval = (p: { approved: boolean; phase: string; uid?: string }): boolean =>
  !p.approved && p.phase === 'Pending' && !!p.uid;
