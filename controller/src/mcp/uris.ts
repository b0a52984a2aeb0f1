import type { ApiContext } from '../api/context.js';
import { type AppOut, appsView } from './views.js';

export const PLAN_TEMPLATE = 'promotion://plans/{namespace}/{name}';
export const APPLICATION_TEMPLATE = 'promotion://applications/{namespace}/{name}';

export const planUri = (namespace: string, name: string) => `promotion://plans/${namespace}/${name}`;
export const applicationUri = (namespace: string, name: string) => `promotion://applications/${namespace}/${name}`;

export interface ResourceRef {
  kind: 'plans' | 'applications';
  namespace: string;
  name: string;
  /** The Kubernetes resource behind it, for RBAC. */
  resource: 'promotionplans' | 'applications';
}

const URI = /^promotion:\/\/(plans|applications)\/([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/;

/** A kpromo resource URI, or undefined for anything else (other schemes, malformed names). */
export function parseUri(uri: string): ResourceRef | undefined {
  const m = URI.exec(uri);
  if (!m) return undefined;
  const kind = m[1] as 'plans' | 'applications';
  return { kind, namespace: m[2], name: m[4], resource: kind === 'plans' ? 'promotionplans' : 'applications' };
}

/** The application resource: the version and health in every Environment, in pipeline order. */
export function applicationJson(ctx: ApiContext, ns: string, name: string): AppOut | undefined {
  const a = ctx.cache.getApplication(ns, name);
  return a && appsView(ctx, [a])[0];
}
