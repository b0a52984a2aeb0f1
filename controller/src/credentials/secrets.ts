import { resourcePath, SECRET } from '../kube/paths.js';
import type { KubeRest } from '../kube/rest.js';

/** A Secret as credential code needs it: its type, decoded data, labels and annotations. */
export interface SecretObject {
  namespace: string;
  name: string;
  type: string;
  data: Record<string, string>;
  /** Where its owner says whether and where it may be sent (credentialPolicy.ts). */
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** Credential problems an Environment writer must fix; `reason` is a condition-style reason. */
export class CredentialsError extends Error {
  override name = 'CredentialsError';
  constructor(
    readonly reason: 'CredentialsNotFound' | 'CredentialsInvalid' | 'CredentialsNotAllowed',
    message: string,
  ) {
    super(message);
  }
}

/** Reads a Secret of the control cluster; undefined when it does not exist. */
export async function readSecretObject(
  rest: Pick<KubeRest, 'getOrUndefined'>,
  namespace: string,
  name: string,
): Promise<SecretObject | undefined> {
  const s = await rest.getOrUndefined<{
    type?: string;
    data?: Record<string, string>;
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  }>(resourcePath(SECRET, namespace, name));
  if (!s) return undefined;
  return {
    namespace,
    name,
    type: s.type ?? 'Opaque',
    data: Object.fromEntries(
      Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    ),
    labels: s.metadata?.labels ?? {},
    annotations: s.metadata?.annotations ?? {},
  };
}

/** Reads a Secret and checks its type; CredentialsError when it is missing or of another type. */
export async function readTypedSecret(
  rest: Pick<KubeRest, 'getOrUndefined'>,
  namespace: string,
  name: string,
  type: string,
  purpose: string,
): Promise<SecretObject> {
  const s = await readSecretObject(rest, namespace, name);
  if (!s) throw new CredentialsError('CredentialsNotFound', `Secret ${namespace}/${name} (${purpose}) not found`);
  if (s.type !== type)
    throw new CredentialsError(
      'CredentialsInvalid',
      `Secret ${namespace}/${name} has type ${s.type}, but ${purpose} must be a Secret of type ${type}`,
    );
  return s;
}
