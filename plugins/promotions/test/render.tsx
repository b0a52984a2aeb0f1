import { mockApis, renderInTestApp } from '@backstage/frontend-test-utils';
import { AuthorizeResult } from '@backstage/plugin-permission-common';
import { type PromotionsApi, promotionsApiRef } from '@kpromo/plugin-promotions-react';
import { configure } from '@testing-library/react';
import type { ReactElement } from 'react';
import { SWRConfig } from 'swr';

// findBy*/waitFor wait for what they assert; their limit is a budget for a hang, not for the work
// before it: pages load several things at once and render in jsdom, which a 2-core machine at load
// 10 stretches to seconds (the test's own limit is the unit project's, vitest.config.ts).
configure({ asyncUtilTimeout: 30_000 });

/**
 * renderInTestApp with a fake promotions API and a permission decision. usePermission caches decisions
 * in SWR's global cache, so each render gets its own cache (else one test's DENY leaks into the next).
 */
export function renderWith(
  element: ReactElement,
  opts: {
    api: PromotionsApi;
    permission?: 'allow' | 'deny' | ((name: string, resourceRef?: string) => boolean);
    /** The signed-in user (identityApi); user:default/alice unless given. */
    user?: string;
    config?: Record<string, unknown>;
    /** More [apiRef, implementation] pairs, e.g. a fetchApi standing in for an external chat endpoint. */
    apis?: Array<readonly [unknown, unknown]>;
    /** Where the element is mounted and the URL the test starts at (routing tests). */
    mountPath?: string;
    initialRouteEntries?: string[];
  },
) {
  const p = opts.permission ?? 'allow';
  const authorize =
    typeof p === 'function'
      ? (r: { permission: { name: string }; resourceRef?: string }) =>
          p(r.permission.name, r.resourceRef) ? AuthorizeResult.ALLOW : AuthorizeResult.DENY
      : p === 'allow'
        ? AuthorizeResult.ALLOW
        : AuthorizeResult.DENY;
  return renderInTestApp(<SWRConfig value={{ provider: () => new Map() }}>{element}</SWRConfig>, {
    apis: [
      [promotionsApiRef, opts.api],
      mockApis.permission({ authorize }),
      mockApis.identity({ userEntityRef: opts.user ?? 'user:default/alice' }),
      ...((opts.apis ?? []) as never[]),
    ],
    config: opts.config as never,
    ...(opts.mountPath ? { mountPath: opts.mountPath } : {}),
    ...(opts.initialRouteEntries ? { initialRouteEntries: opts.initialRouteEntries } : {}),
  });
}
