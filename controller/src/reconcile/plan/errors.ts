import { PermanentAppError } from '../../extension/errors.js';
import { FencedError } from '../../leader/leaderElection.js';
import { ObjectGoneError, StatusConflictError } from '../statusWriter.js';

/** Registry and cluster error codes (OciError, ClusterClients) and how a step failing with them is recorded. */
const BY_CODE = new Map<string, { permanent: boolean; reason: string }>([
  ['NOT_FOUND', { permanent: true, reason: 'ImageNotFound' }],
  ['DIGEST_MISMATCH', { permanent: true, reason: 'DigestMismatch' }],
  ['UNAUTHORIZED', { permanent: true, reason: 'RegistryUnauthorized' }],
  ['PROTOCOL', { permanent: true, reason: 'RegistryProtocolError' }],
  ['UNAVAILABLE', { permanent: false, reason: 'RegistryUnavailable' }],
  // Configuration, not a transient fault: retrying cannot help until clusterAccess changes.
  ['CLUSTER_NOT_ALLOWED', { permanent: true, reason: 'ClusterNotAllowed' }],
]);

/** How a step failure is recorded: `permanent` ends the app, otherwise it is retried with backoff. */
export function classify(e: unknown): { permanent: boolean; reason: string; message: string } {
  if (e instanceof PermanentAppError) return { permanent: true, reason: e.reason, message: e.message };
  // Errors that say retrying cannot help (a bad values path, an unparsable file) carry `permanent`.
  if ((e as { permanent?: unknown })?.permanent === true)
    return { permanent: true, reason: (e as Error).name || 'InvalidConfiguration', message: (e as Error).message };
  const code = (e as { code?: string })?.code;
  const message = (e as Error)?.message ?? String(e);
  return { ...((code && BY_CODE.get(code)) || { permanent: false, reason: 'StepError' }), message };
}

/**
 * Not the app's fault: lost leadership or a stale journal. Nothing is recorded; the reconcile is
 * abandoned (and retried from the fresh status by whoever leads).
 */
export const abandonsReconcile = (e: unknown, signal?: AbortSignal) =>
  e instanceof ObjectGoneError || e instanceof FencedError || e instanceof StatusConflictError || !!signal?.aborted;
