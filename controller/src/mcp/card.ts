import { PLAN_CARD_HTML } from '@kpromo/plan-card';
import { RESOURCE_MIME_TYPE, registerAppResource } from '@modelcontextprotocol/ext-apps/server';
import type { McpServer } from '@modelcontextprotocol/server';

// The plan card (MCP Apps, built by @kpromo/plan-card): one ui:// resource, named by the tools that
// return a plan (state, plan, promote) in their _meta.ui.resourceUri. Hosts with MCP Apps render it
// with the tool's result; others ignore it and read the same content in the result's text (cardText,
// summary.ts).

export const PLAN_CARD_URI = 'ui://kpromo/plan-card.html';

/** The card is static (no cluster data): the plan arrives with the tool result the host hands it. */
export function registerPlanCard(server: McpServer): void {
  registerAppResource(
    server,
    'plan-card',
    PLAN_CARD_URI,
    {
      title: 'PromotionPlan card',
      description:
        "Interactive card for a PromotionPlan (MCP Apps): candidates with versions, digests, signature verdicts and their step in the release's order, verification values as charts, the pull request it promotes through, the approvals still needed, Approve and Reject.",
      mimeType: RESOURCE_MIME_TYPE,
      // No network access at all: the view is one self-contained document.
      _meta: { ui: { csp: { connectDomains: [], resourceDomains: [] }, prefersBorder: true } },
    },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: RESOURCE_MIME_TYPE, text: PLAN_CARD_HTML }] }),
  );
}
