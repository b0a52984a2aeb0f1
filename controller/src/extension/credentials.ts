import type { Environment } from '@kpromo/api';
import { gitCredentials } from '../credentials/gitCredentials.js';
import { type EndpointCredentials, registryCredentials } from '../credentials/registryCredentials.js';
import { CredentialsError } from '../credentials/secrets.js';
import type { KubeRest } from '../kube/rest.js';
import type { RegistryEndpoint } from '../oci/registryClient.js';
import type { CommitImageChangeRequest } from './deliveryMethod.js';
import { PermanentAppError } from './errors.js';

/** A missing or unusable credentials Secret is the Environment's to fix: the app fails, naming where it was configured. */
async function orPermanent<T>(read: () => Promise<T>, where: string): Promise<T> {
  try {
    return await read();
  } catch (e) {
    if (e instanceof CredentialsError) throw new PermanentAppError(e.reason, `${e.message} (${where})`);
    throw e;
  }
}

/**
 * Registry credentials of an Environment from its `kubernetes.io/dockerconfigjson` Secret: the
 * `auths` entry matching its registry host and `repository` (kubelet's imagePullSecrets matching),
 * never another host's entry; nothing when none matches (a 401 then says so).
 */
export async function registryAuth(
  control: KubeRest,
  env: Environment,
  repository: string,
): Promise<EndpointCredentials> {
  const ref = env.spec.registry.credentialsSecretRef;
  if (!ref) return {};
  const ns = env.metadata.namespace ?? 'default';
  return orPermanent(
    () => registryCredentials(control, ns, ref.name, env.spec.registry.host, repository, env.spec.registry.insecure),
    `Environment ${env.metadata.name} registry credentials`,
  );
}

/** The registry of an Environment with its credentials for `repository`. */
export async function registryEndpoint(
  control: KubeRest,
  env: Environment,
  repository: string,
): Promise<RegistryEndpoint> {
  return {
    host: env.spec.registry.host,
    insecure: env.spec.registry.insecure,
    ...(await registryAuth(control, env, repository)),
  };
}

/**
 * Git credentials of an Environment's `delivery.git`: a kubernetes.io/basic-auth Secret, used only
 * for repositories under the URL prefix it names; undefined when none is configured.
 */
export async function gitDeliveryAuth(control: KubeRest, env: Environment): Promise<CommitImageChangeRequest['auth']> {
  const g = env.spec.delivery.git;
  if (!g?.credentialsSecretRef) return undefined;
  const ns = env.metadata.namespace ?? 'default';
  const secret = g.credentialsSecretRef.name;
  const cred = await orPermanent(
    () => gitCredentials(control, ns, secret, g.repository),
    `Environment ${env.metadata.name} delivery.git`,
  );
  return { username: cred.username, password: cred.password, url: cred.url };
}
