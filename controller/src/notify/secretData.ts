import { resourcePath, SECRET } from '../kube/paths.js';
import type { KubeRest } from '../kube/rest.js';

/** Every key of a Secret, decoded (spec.webhook.headersSecretRef); undefined when it does not exist. */
export async function readSecretData(
  rest: Pick<KubeRest, 'getOrUndefined'>,
  namespace: string,
  name: string,
): Promise<Record<string, string> | undefined> {
  const s = await rest.getOrUndefined<{ data?: Record<string, string> }>(resourcePath(SECRET, namespace, name));
  if (!s) return undefined;
  return Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
}
