import type { KubeRest } from '../kube/rest.js';
import {
  credentialsFor,
  DOCKER_CONFIG_JSON_KEY,
  DOCKER_CONFIG_JSON_TYPE,
  type DockerConfig,
  DockerConfigError,
  parseDockerConfig,
} from '../oci/dockerConfig.js';
import type { RegistryEndpoint } from '../oci/registryClient.js';
import { type CredentialSecretMeta, credentialRefusal } from './credentialPolicy.js';
import { CredentialsError, readTypedSecret } from './secrets.js';

export type EndpointCredentials = Pick<RegistryEndpoint, 'auth' | 'realmAuth' | 'noAuthReason'>;

/** The field naming the Secret, for messages. */
export const REGISTRY_CREDENTIALS_FIELD = 'spec.registry.credentialsSecretRef';

/**
 * Pure: why `secret` may not be sent to registry or token service `host` (over http when
 * `insecure`), or undefined. The Secret must opt in (label promotions.kpromo.dev/credential); its
 * auths keys name the hosts of each entry, and annotation promotions.kpromo.dev/destinations, when
 * present, narrows them further (credentialPolicy.ts).
 */
export function registryRefusal(secret: CredentialSecretMeta, host: string, insecure = false): string | undefined {
  return credentialRefusal(
    secret,
    { field: REGISTRY_CREDENTIALS_FIELD, destinationField: `registry host ${host}` },
    `${insecure ? 'http' : 'https'}://${host}/`,
    { destinationsOptional: true },
  );
}

/**
 * The credentials of one registry endpoint from a `kubernetes.io/dockerconfigjson` Secret that
 * opted in as a credential: the entry matching `host`/`repository` for the registry, entries
 * matching a token service's own host for it, and nothing for any other host or any host its
 * destinations annotation leaves out. Throws CredentialsError for a missing, mistyped, malformed or
 * refused Secret.
 */
export async function registryCredentials(
  rest: Pick<KubeRest, 'getOrUndefined'>,
  namespace: string,
  secretName: string,
  host: string,
  repository: string,
  insecure = false,
): Promise<EndpointCredentials> {
  const s = await readTypedSecret(
    rest,
    namespace,
    secretName,
    DOCKER_CONFIG_JSON_TYPE,
    `registry credentials (key ${DOCKER_CONFIG_JSON_KEY})`,
  );
  const refusal = registryRefusal(s, host, insecure);
  if (refusal) throw new CredentialsError('CredentialsNotAllowed', refusal);
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
    // A token service on another host gets its own entry only where the Secret lets it go.
    (realmHost) => registryRefusal(s, realmHost, insecure) === undefined,
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
  /** Whether a token service's host may get its entry (checked when it is asked for); all when absent. */
  realmAllowed: (realmHost: string) => boolean = () => true,
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
  const realmAuth = (realmHost: string, repo: string) =>
    realmAllowed(realmHost) ? lookup(realmHost, repo) : undefined;
  return auth ? { auth, realmAuth } : { realmAuth, noAuthReason: `no credentials in ${where} for host ${host}` };
}
