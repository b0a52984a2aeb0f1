import type { KubeRest } from '../kube/rest.js';
import { credentialRefusal } from './credentialPolicy.js';
import { CredentialsError, readTypedSecret, type SecretObject } from './secrets.js';

/**
 * Git credentials: a `kubernetes.io/basic-auth` Secret that opted in as a credential and names the
 * repositories it may be sent to (credentialPolicy.ts: label promotions.kpromo.dev/credential,
 * annotation promotions.kpromo.dev/destinations).
 */
export const BASIC_AUTH_TYPE = 'kubernetes.io/basic-auth';
/** The field naming the Secret, for messages. */
export const GIT_CREDENTIALS_FIELD = 'spec.delivery.git.credentialsSecretRef';
/** Older form: Secret data key holding a repository URL prefix; still narrows where the credentials go. */
export const GIT_URL_KEY = 'url';
/** Older form: annotation holding a repository URL prefix (alternative to the `url` key); still narrows. */
export const GIT_URL_ANNOTATION = 'promotions.kpromo.dev/url';

export interface GitCredentials {
  username: string;
  password: string;
  /** The older URL prefix of the Secret when it names one, else the repository URL; normalised. */
  prefix: string;
  /** The repository URL, normalised: git sends the credentials to URLs under it only. */
  url: string;
}

/** An http(s) URL reduced to what decides where a request goes. */
export interface NormalizedGitUrl {
  scheme: 'http' | 'https';
  /** Lower-case host, with the port unless it is the scheme's default. */
  host: string;
  /** Non-empty path segments, as written (case-sensitive). */
  segments: string[];
}

const RAW_URL = /^(https?):\/\/([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?(\/[^\s\\?#]*)?$/;

/**
 * Parses an http(s) URL strictly: host[:port] right after the scheme (no user info, so
 * `https://git.example.com@evil.com/` is refused instead of going to evil.com), no backslashes,
 * whitespace, query or fragment, no `.`/`..` segments and no encoded `.`, `/` or `\`, so every URL
 * parser (ours, git's, curl's, the server's) agrees on the host and path.
 */
export function normalizeGitUrl(raw: string, what: string): NormalizedGitUrl {
  const bad = (why: string) => new CredentialsError('CredentialsInvalid', `${what} "${redactUserinfo(raw)}" ${why}`);
  const m = RAW_URL.exec(raw.trim());
  if (!m) {
    if (!/^https?:\/\//i.test(raw.trim()))
      throw bad('is not an http(s) URL (basic-auth credentials are sent over http(s) only)');
    if (/^https?:\/\/[^/]*@/i.test(raw.trim())) throw bad('must not contain user info (user@ or user:password@)');
    throw bad('must be scheme://host[:port]/path without query, fragment, whitespace or backslashes');
  }
  const scheme = m[1].toLowerCase() as 'http' | 'https';
  const port = m[3] && Number(m[3]) !== (scheme === 'https' ? 443 : 80) ? `:${Number(m[3])}` : '';
  const path = m[4] ?? '/';
  if (/%(2e|2f|5c)/i.test(path)) throw bad('must not contain encoded ".", "/" or "\\" in its path');
  const segments = path.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '.' || s === '..')) throw bad('must not contain "." or ".." path segments');
  return { scheme, host: `${m[2].toLowerCase()}${port}`, segments };
}

/** True when `url` is under `prefix`: same scheme and host:port, and the prefix's path segments lead its path. */
export function urlHasPrefix(url: NormalizedGitUrl, prefix: NormalizedGitUrl): boolean {
  return (
    url.scheme === prefix.scheme &&
    url.host === prefix.host &&
    prefix.segments.length <= url.segments.length &&
    prefix.segments.every((s, i) => url.segments[i] === s)
  );
}

export const formatGitUrl = (u: NormalizedGitUrl) => `${u.scheme}://${u.host}/${u.segments.join('/')}`;

/**
 * Pure: the basic-auth credentials of `secret` for `repository`. The Secret must opt in and its
 * destinations must allow the repository (credentialPolicy.ts); a URL prefix in its older key `url`
 * or annotation promotions.kpromo.dev/url, when present, must hold as well. CredentialsError otherwise.
 */
export function gitCredentialsFor(secret: SecretObject, repository: string): GitCredentials {
  const where = `Secret ${secret.namespace}/${secret.name}`;
  const repo = normalizeGitUrl(repository, 'delivery.git.repository');
  const refusal = credentialRefusal(
    secret,
    { field: GIT_CREDENTIALS_FIELD, destinationField: 'spec.delivery.git.repository' },
    formatGitUrl(repo),
  );
  if (refusal) throw new CredentialsError('CredentialsNotAllowed', refusal);
  const fromKey = secret.data[GIT_URL_KEY]?.trim();
  const fromAnnotation = secret.annotations[GIT_URL_ANNOTATION]?.trim();
  if (fromKey && fromAnnotation && fromKey !== fromAnnotation)
    throw new CredentialsError(
      'CredentialsInvalid',
      `${where} names two different URL prefixes (key "${GIT_URL_KEY}" and annotation ${GIT_URL_ANNOTATION}); keep one`,
    );
  const named = fromKey || fromAnnotation;
  const prefix = named ? normalizeGitUrl(named, `${where} URL prefix`) : undefined;
  if (prefix && !urlHasPrefix(repo, prefix))
    throw new CredentialsError(
      'CredentialsNotAllowed',
      `${where} is only for repositories under ${formatGitUrl(prefix)}, not ${formatGitUrl(repo)}; use a Secret for that URL or fix delivery.git.repository`,
    );
  const password = secret.data.password;
  if (!password)
    throw new CredentialsError('CredentialsInvalid', `${where} has no password (the git password or token)`);
  return {
    username: secret.data.username || 'git',
    password,
    prefix: formatGitUrl(prefix ?? repo),
    url: formatGitUrl(repo),
  };
}

/** Reads the git credentials Secret and checks it for `repository` (see gitCredentialsFor). */
export async function gitCredentials(
  rest: Pick<KubeRest, 'getOrUndefined'>,
  namespace: string,
  secretName: string,
  repository: string,
): Promise<GitCredentials> {
  const s = await readTypedSecret(rest, namespace, secretName, BASIC_AUTH_TYPE, 'git credentials (username, password)');
  return gitCredentialsFor(s, repository);
}

function redactUserinfo(s: string): string {
  return s.replace(/(\w+:\/\/)[^/@\s]+@/g, '$1***@');
}
