import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { componentUsed } from './need.js';
import { cacheRoot, runBuildScript, versions } from './paths.js';

/**
 * Path of kubectl built from k8s.io/kubernetes/cmd/kubectl at the control plane's K8S_VERSION
 * (test/cluster/versions.env); builds it with test/cluster/kubectl.sh (a minute or two, once; needs
 * Go) when absent. Tests acting as a user run this one, never whatever `kubectl` is on PATH.
 */
export function kubectlPath(log: (s: string) => void = () => {}): string {
  componentUsed('kubectl');
  const v = versions();
  const bin = join(cacheRoot(), 'kubectl', `kubectl-${v.K8S_VERSION}_r${v.KUBECTL_BUILD_REV}`, 'bin', 'kubectl');
  if (existsSync(bin)) return bin;
  log(`building kubectl ${v.K8S_VERSION} into ${join(bin, '..')} (first time only; needs Go)…`);
  const built = join(runBuildScript('kubectl.sh'), 'kubectl');
  if (!existsSync(built)) throw new Error(`test/cluster/kubectl.sh finished but ${built} is missing`);
  return built;
}
