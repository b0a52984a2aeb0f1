import * as k8s from '@kubernetes/client-node';
import { defaultKubeconfigPath } from './cluster/paths.js';

/** A KubeConfig for one harness cluster context (dev, stable, prod…). */
export function kubeConfigFor(
  context: string,
  path = process.env.KUBECONFIG ?? defaultKubeconfigPath(),
): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  kc.setCurrentContext(context);
  return kc;
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 60_000,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      lastErr = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
}
