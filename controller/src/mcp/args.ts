import { z } from 'zod';

// Tool arguments shared by tools.ts and historyTools.ts.
const K8S_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
export const name = (what: string) =>
  z.string().min(1).max(253).regex(K8S_NAME, `${what} must be a Kubernetes object name (lowercase, digits, -, .)`);
// Mirrored into the Mcp-Param-Namespace header on 2026-07-28 (SEP-2243), so gateways can route
// and police by namespace without reading bodies; the server rejects a header that disagrees.
export const nsArg = name('namespace')
  .optional()
  .describe('Namespace of the kpromo resources; the server default when omitted')
  .meta({ 'x-mcp-header': 'Namespace' });
