import type { KubeRest } from '../kube/rest.js';
import type { RegistryEndpoint } from '../oci/registryClient.js';
import {
  credentialsFor,
  DOCKER_CONFIG_JSON_KEY,
  DOCKER_CONFIG_JSON_TYPE,
  type DockerConfig,
  DockerConfigError,
  parseDockerConfig,
} from './dockerConfig.js';
import { CredentialsError, readTypedSecret } from './secrets.js';

export type EndpointCredentials = Pick<RegistryEndpoint, 'auth' | 'realmAuth' | 'noAuthReason'>;

/**
 * The credentials of one registry endpoint from a `kubernetes.io/dockerconfigjson` Secret: the entry
 * matching `host`/`repository` for the registry, entries matching a token service's own host for it,
 * and nothing for any other host. Throws CredentialsError for a missing, mistyped or malformed Secret.
 */
export async function registryCredentials(
  rest: Pick<KubeRest, 'getOrUndefined'>,
  namespace: string,
  secretName: string,
  host: string,
  repository: string,
): Promise<EndpointCredentials> {
  const s = await readTypedSecret(
    rest,
    namespace,
    secretName,
    DOCKER_CONFIG_JSON_TYPE,
    `registry credentials (key ${DOCKER_CONFIG_JSON_KEY})`,
  );
  const text = s.data[DOCKER_CONFIG_JSON_KEY];
  if (text === undefined)
    throw new CredentialsError(
      'CredentialsInvalid',
      `Secret ${namespace}/${secretName} has no key ${DOCKER_CONFIG_JSON_KEY}`,
    );
  return endpointCredentials(
    parseOrThrow(text, `Secret ${namespace}/${secretName}`),
    `Secret ${namespace}/${secretName}`,
    host,
    repository,
  );
}

function parseOrThrow(text: string, where: string): DockerConfig {
  try {
    return parseDockerConfig(text);
  } catch (e) {
    throw new CredentialsError('CredentialsInvalid', `${where} ${DOCKER_CONFIG_JSON_KEY}: ${(e as Error).message}`);
  }
}

/** Pure: endpoint credentials for `host`/`repository` from a parsed docker config (`where` names it in messages). */
export function endpointCredentials(
  cfg: DockerConfig,
  where: string,
  host: string,
  repository: string,
): EndpointCredentials {
  const lookup = (h: string, repo: string) => {
    try {
      return credentialsFor(cfg, h, repo)?.auth;
    } catch (e) {
      if (e instanceof DockerConfigError)
        throw new CredentialsError('CredentialsInvalid', `${where} ${DOCKER_CONFIG_JSON_KEY}: ${e.message}`);
      throw e;
    }
  };
  const auth = lookup(host, repository);
  const realmAuth = (realmHost: string, repo: string) => lookup(realmHost, repo);
  return auth ? { auth, realmAuth } : { realmAuth, noAuthReason: `no credentials in ${where} for host ${host}` };
}
