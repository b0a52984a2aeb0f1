import { ApiError, ConfigError, KubeError } from '@kpromo/controller/api';
import { CommanderError } from 'commander';

/** Exit codes of `kpromo`, shown by `kpromo --help` and in the README; scripts rely on them. */
export const EXIT = {
  OK: 0,
  FAILURE: 1,
  USAGE: 2,
  FORBIDDEN: 3,
  NOT_FOUND: 4,
  CONFLICT: 5,
  PLAN_FAILED: 6,
  UNVERIFIED: 7,
} as const;

const MEANING: Record<keyof typeof EXIT, string> = {
  OK: 'success (plan watch: the plan succeeded)',
  FAILURE: 'failure: cluster unreachable, timeout, unexpected error',
  USAGE: 'usage error or invalid request (HTTP 400)',
  FORBIDDEN: 'not authenticated or forbidden by Kubernetes RBAC or admission (HTTP 401, 403)',
  NOT_FOUND: 'not found, or not readable by you (HTTP 404)',
  CONFLICT: 'conflict: already exists, already approved (HTTP 409)',
  PLAN_FAILED: 'the watched plan finished without succeeding (Failed, Incomplete; a promotion RolledBack)',
  UNVERIFIED: 'verify: no promotion attestation of the image verifies with the given keys',
};

export const EXIT_CODES_HELP = `Exit codes:\n${Object.entries(EXIT)
  .map(([k, code]) => `  ${code}  ${MEANING[k as keyof typeof EXIT]}`)
  .join('\n')}`;

/** A command line the CLI itself refuses (exit 2). */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A failure with a chosen exit code and a message for the user, e.g. a watched plan that failed. */
export class CliFailure extends Error {
  override name = 'CliFailure';
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export function exitCodeForStatus(status: number): number {
  if (status === 400 || status === 422) return EXIT.USAGE;
  if (status === 401 || status === 403) return EXIT.FORBIDDEN;
  if (status === 404) return EXIT.NOT_FOUND;
  if (status === 409) return EXIT.CONFLICT;
  return EXIT.FAILURE;
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT', 'EAI_AGAIN']);

/**
 * The exit code and the one-line message for an error (no stack trace: every message says what
 * failed and what to do). `message` is empty where commander has already printed its own.
 */
export function describeFailure(e: unknown): { code: number; message: string } {
  // Help asked for (--help, `help plan`) exits 0; help shown for a missing command, like every
  // other commander refusal, is a usage error.
  if (e instanceof CommanderError) return { code: e.exitCode === 0 ? EXIT.OK : EXIT.USAGE, message: '' };
  if (e instanceof CliFailure) return { code: e.code, message: e.message };
  if (e instanceof UsageError) return { code: EXIT.USAGE, message: e.message };
  if (e instanceof ApiError) return { code: exitCodeForStatus(e.status), message: e.message };
  if (e instanceof ConfigError) return { code: EXIT.USAGE, message: e.problems.join('; ') };
  if (e instanceof KubeError) return { code: exitCodeForStatus(e.status), message: e.message };
  const err = e instanceof Error ? e : new Error(String(e));
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code && NETWORK_CODES.has(cause.code))
    return {
      code: EXIT.FAILURE,
      message: `cannot reach the Kubernetes API: ${cause.message ?? cause.code}; check --kubeconfig and --context`,
    };
  if (err.name === 'TimeoutError' || /sync aborted/.test(err.message))
    return {
      code: EXIT.FAILURE,
      message: `timed out reading from the cluster (${err.message}); check that the apiserver is up and reachable`,
    };
  return { code: EXIT.FAILURE, message: err.message || err.name };
}
