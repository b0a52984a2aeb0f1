import type { McpServer } from '@modelcontextprotocol/server';
import { ProtocolError, ProtocolErrorCode, ResourceNotFoundError } from '@modelcontextprotocol/server';
import type { ApiContext } from '../api/context.js';
import type { Caller } from '../auth/identity.js';
import { changeFeed } from './feed.js';
import type { McpServerOptions } from './guard.js';
import { callerOrError, mayRead } from './resources.js';
import { parseUri } from './uris.js';

/** List-change notifications to one connection are coalesced over this window. */
const LIST_CHANGED_DEBOUNCE_MS = 500;

/**
 * 2025-era resource subscriptions of one long-lived connection (a Streamable HTTP session or a
 * stdio connection): resources/subscribe and resources/unsubscribe for plan and application URIs
 * the caller may read, `notifications/resources/updated` when the informer cache shows that the
 * resource changed, and `notifications/resources/list_changed` when a plan or application appears
 * or goes away in a namespace where the caller may list them. Returns the cleanup for the
 * connection's end.
 */
export function registerLegacySubscriptions(
  server: McpServer,
  ctx: ApiContext,
  o: McpServerOptions,
  /** Who opened the connection (list changes are filtered by what they may list). */
  owner: Caller | undefined,
): () => void {
  const feed = changeFeed(ctx);
  const subs = new Map<string, () => void>();
  const send = (uri: string) => {
    if (server.isConnected()) void server.server.sendResourceUpdated({ uri }).catch(() => undefined);
  };

  server.server.setRequestHandler('resources/subscribe', async (request, extra) => {
    const { uri } = request.params;
    const caller = callerOrError(extra, o);
    if (!parseUri(uri))
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `cannot subscribe to ${uri}: only promotion://plans/{namespace}/{name} and promotion://applications/{namespace}/{name} are served`,
        { uri },
      );
    // Subscribing to a plan that does not exist yet is allowed (it may be created), reading it is not.
    if (!(await mayRead(ctx, caller, uri))) throw new ResourceNotFoundError(uri);
    if (!subs.has(uri)) subs.set(uri, feed.onResource(uri, send));
    return {};
  });
  server.server.setRequestHandler('resources/unsubscribe', async (request) => {
    const release = subs.get(request.params.uri);
    release?.();
    subs.delete(request.params.uri);
    return {};
  });

  let pending: NodeJS.Timeout | undefined;
  const stopList = owner
    ? feed.onList((resource, namespace) => {
        void ctx.access
          .may(owner, { verb: 'list', resource, namespace })
          .then((allowed) => {
            if (!allowed || pending) return;
            pending = setTimeout(() => {
              pending = undefined;
              server.sendResourceListChanged();
            }, LIST_CHANGED_DEBOUNCE_MS);
            pending.unref();
          })
          .catch(() => undefined);
      })
    : () => undefined;

  return () => {
    for (const release of subs.values()) release();
    subs.clear();
    stopList();
    if (pending) clearTimeout(pending);
  };
}
