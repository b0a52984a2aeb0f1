import { DEFAULT_SKIPPED_SHOWN, K8S_NAME, MAX_PATTERN_LENGTH, MAX_SKIPPED_SHOWN } from '@kpromo/contract';
import { z } from 'zod';

// Tool arguments several rows share.

export const name = (what: string) =>
  z.string().min(1).max(253).regex(K8S_NAME, `${what} must be a Kubernetes object name (lowercase, digits, -, .)`);
// Mirrored into the Mcp-Param-Namespace header on 2026-07-28 (SEP-2243), so gateways can route
// and police by namespace without reading bodies; the server rejects a header that disagrees.
export const nsArg = name('namespace')
  .optional()
  .describe('Namespace of the kpromo resources; the server default when omitted')
  .meta({ 'x-mcp-header': 'Namespace' });

/** The candidate filters of diff and plan (the contract's names; tighter lists, an agent's calls are small). */
export const filterArgs = {
  applications: z.array(z.string().min(1).max(253)).max(100).optional().describe('Application names or globs (* ?)'),
  teams: z.array(z.string().min(1)).max(50).optional().describe('Owning teams'),
  matchLabels: z.record(z.string(), z.string()).optional().describe('Labels every application must have'),
  tagPattern: z
    .string()
    .max(MAX_PATTERN_LENGTH)
    .optional()
    .describe('Regular expression (RE2 syntax: no backreferences or lookaround) source tags must match'),
};

/**
 * Candidates listed in a diff/plan answer. At 5,000 applications a diff has thousands: all of them
 * made a 320 KiB answer that costs the server its serialisation and an agent its context, so the
 * answer lists the first ones (by name) and counts all (`candidatesTotal`).
 */
const DEFAULT_CANDIDATES_SHOWN = 100;
const MAX_CANDIDATES_SHOWN = 10_000;
export const listedArgs = {
  candidateLimit: z
    .number()
    .int()
    .min(0)
    .max(MAX_CANDIDATES_SHOWN)
    .optional()
    .describe(
      `Candidates to list, by application name (default ${DEFAULT_CANDIDATES_SHOWN}); candidatesTotal counts all`,
    ),
  skippedLimit: z
    .number()
    .int()
    .min(0)
    .max(MAX_SKIPPED_SHOWN)
    .optional()
    .describe(
      `Skipped applications to list (default ${DEFAULT_SKIPPED_SHOWN}, actionable reasons first); counts cover all`,
    ),
};
export const firstCandidates = <T>(all: T[], limit: number | undefined) =>
  all.slice(0, limit ?? DEFAULT_CANDIDATES_SHOWN);
