import * as k8s from '@kubernetes/client-node';
import { KubeRest } from './rest.js';

/** The caller's kubeconfig: the file given, else $KUBECONFIG / ~/.kube/config (kubectl's order). */
export function loadKubeconfig(path?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

/** A client of one context of the caller's kubeconfig, as the caller; undefined when it has no such context. */
export function clientForContext(base: k8s.KubeConfig, context: string): KubeRest | undefined {
  if (!base.getContexts().some((c) => c.name === context)) return undefined;
  const kc = new k8s.KubeConfig();
  kc.loadFromString(base.exportConfig());
  kc.setCurrentContext(context);
  return new KubeRest(kc, context);
}

/** "(it has: a, b)" for messages about a missing context. */
export const contextsOf = (kc: k8s.KubeConfig) =>
  `(it has: ${kc
    .getContexts()
    .map((c) => c.name)
    .join(', ')})`;
