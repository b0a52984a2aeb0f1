import type { Environment } from '@kpromo/api';
import { createGiteaForge, createGitHubForge, type Forge, type RepoRef } from '@kpromo/forge';
import { credentialRefusal } from '../credentials/credentialPolicy.js';
import { readSecretObject } from '../credentials/secrets.js';
import { PermanentAppError } from '../extension/errors.js';
import type { KubeRest } from '../kube/rest.js';
import { pullRequestDelivery } from '../reconcile/pullRequestDecisions.js';

const FIELD = 'spec.delivery.git.pullRequest.tokenSecretRef';

/**
 * The forge an Environment promotes through (delivery.git.pullRequest), with its token: a Secret
 * that opted in as a credential and names the forge's API among its destinations, like every
 * credential kpromo sends (credentials/credentialPolicy.ts). Problems are the Environment's to fix.
 */
export async function forgeForEnvironment(control: Pick<KubeRest, 'getOrUndefined'>, env: Environment): Promise<Forge> {
  const pr = pullRequestDelivery(env);
  const owner = `Environment ${env.metadata.namespace}/${env.metadata.name}`;
  if (!pr) throw new PermanentAppError('InvalidEnvironment', `${owner} does not deliver through pull requests`);
  const ns = env.metadata.namespace ?? 'default';
  const s = await readSecretObject(control, ns, pr.tokenSecretRef.name);
  if (!s)
    throw new PermanentAppError(
      'CredentialsNotFound',
      `Secret ${ns}/${pr.tokenSecretRef.name} (${FIELD} of ${owner}) not found: create it with the forge token in key "token"`,
    );
  const refusal = credentialRefusal(
    s,
    { field: FIELD, owner, destinationField: 'spec.delivery.git.pullRequest.apiURL' },
    pr.apiURL,
  );
  if (refusal) throw new PermanentAppError('CredentialsNotAllowed', refusal);
  const token = s.data.token?.trim();
  if (!token)
    throw new PermanentAppError(
      'CredentialsInvalid',
      `Secret ${ns}/${s.name} (${FIELD} of ${owner}) has no key "token" (the forge's API token)`,
    );
  const o = { baseUrl: pr.apiURL, token };
  return pr.forge === 'gitea' ? createGiteaForge(o) : createGitHubForge(o);
}

/** `owner/name` as the forge adapters take it (the CRD's pattern has checked its form). */
export function repoRef(repository: string): RepoRef {
  const [owner, name] = repository.split('/');
  return { owner, name };
}
