import { z } from 'zod';
import { cidrProblem } from './egressPolicy.js';

/**
 * `egress:` section of the controller config: where requests whose URL comes from a custom resource
 * (Notification webhooks, Application http health checks, OCI registries with the token services and
 * redirect targets they name) may go besides public addresses.
 */
export const EgressConfigSchema = z
  .object({
    /**
     * CIDRs (or single addresses) let through although they are blocked by default (loopback,
     * private, link-local, ...). The controller's own API and MCP listeners and the cloud metadata
     * addresses stay blocked whatever is listed.
     */
    allowedCidrs: z
      .array(z.string())
      .default([])
      .superRefine((list, ctx) => {
        for (const entry of list) {
          const problem = cidrProblem(entry);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }
      }),
  })
  .strict();

export type EgressConfig = z.infer<typeof EgressConfigSchema>;
export const EGRESS_DEFAULTS: EgressConfig = { allowedCidrs: [] };
