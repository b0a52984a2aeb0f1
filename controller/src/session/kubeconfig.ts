import type * as k8s from '@kubernetes/client-node';
import { clientForContext, contextsOf, loadKubeconfig } from '../kube/contextClients.js';
import type { KubeRest } from '../kube/rest.js';

/**
 * Why a kubeconfig opens no session; each front end words it for its own flags. `contexts` lists
 * what the kubeconfig has: "(it has: a, b)".
 */
export type ContextProblem =
  | { kind: 'noCurrentContext'; contexts: string }
  | { kind: 'unknownContext'; context: string; contexts: string };

/** The caller's kubeconfig, as a local session reads it. */
export interface LocalKubeconfig {
  /** The kubeconfig, its current context set to {@link context}. */
  kubeconfig: k8s.KubeConfig;
  /** The control cluster's context: the one asked for, else the kubeconfig's current one. */
  context: string;
  /** The context's namespace, else `default` (as kubectl): where a session works unless told otherwise. */
  namespace: string;
  /** A client of one context of the kubeconfig, as the caller; undefined when it has no such context. */
  clientFor(context: string): KubeRest | undefined;
  /** {@link clientFor}, refusing (with `refuse`'s error) a context the kubeconfig does not have. */
  requireClient(context: string): KubeRest;
  /** The namespace of one context of the kubeconfig, else `default`. */
  namespaceOf(context: string): string;
}

/**
 * Loads the caller's kubeconfig (the file given, else $KUBECONFIG / ~/.kube/config) and chooses the
 * control cluster's context. A kubeconfig without that context is refused at once with `refuse`'s
 * error, before anything is sent anywhere.
 */
export function openKubeconfig(
  o: { kubeconfig?: string; context?: string },
  refuse: (problem: ContextProblem) => Error,
): LocalKubeconfig {
  const kc = loadKubeconfig(o.kubeconfig);
  const context = o.context ?? kc.getCurrentContext();
  if (!context) throw refuse({ kind: 'noCurrentContext', contexts: contextsOf(kc) });
  if (!kc.getContexts().some((c) => c.name === context))
    throw refuse({ kind: 'unknownContext', context, contexts: contextsOf(kc) });
  kc.setCurrentContext(context);
  const namespaceOf = (ctx: string) => kc.getContextObject(ctx)?.namespace ?? 'default';
  return {
    kubeconfig: kc,
    context,
    namespace: namespaceOf(context),
    clientFor: (ctx) => clientForContext(kc, ctx),
    requireClient(ctx) {
      const rest = clientForContext(kc, ctx);
      if (!rest) throw refuse({ kind: 'unknownContext', context: ctx, contexts: contextsOf(kc) });
      return rest;
    },
    namespaceOf,
  };
}
