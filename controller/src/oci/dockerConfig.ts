import type { RegistryAuth } from './registryClient.js';

/** Secret type and key of registry credentials, as for Pod imagePullSecrets. */
export const DOCKER_CONFIG_JSON_TYPE = 'kubernetes.io/dockerconfigjson';
export const DOCKER_CONFIG_JSON_KEY = '.dockerconfigjson';

/** One `auths` entry of a docker config.json. */
export interface DockerConfigEntry {
  auth?: string;
  username?: string;
  password?: string;
  identitytoken?: string;
  registrytoken?: string;
  email?: string;
}

export interface DockerConfig {
  auths: Record<string, DockerConfigEntry>;
}

export class DockerConfigError extends Error {
  override name = 'DockerConfigError';
}

/** Parses `.dockerconfigjson` text (`{"auths": {...}}`); throws DockerConfigError with what is wrong. */
export function parseDockerConfig(text: string): DockerConfig {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new DockerConfigError(`not valid JSON (${(e as Error).message})`);
  }
  const auths = (v as { auths?: unknown } | null)?.auths;
  if (!auths || typeof auths !== 'object' || Array.isArray(auths)) throw new DockerConfigError('has no "auths" object');
  for (const [key, entry] of Object.entries(auths)) {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry))
      throw new DockerConfigError(`auths entry "${key}" is not an object`);
    for (const f of ['auth', 'username', 'password', 'identitytoken', 'registrytoken', 'email'] as const) {
      const x = (entry as Record<string, unknown>)[f];
      if (x !== undefined && typeof x !== 'string')
        throw new DockerConfigError(`auths entry "${key}" field ${f} is not a string`);
    }
  }
  return { auths: auths as Record<string, DockerConfigEntry> };
}

/** A parsed `auths` key: host glob, optional port, optional path (no trailing slash). */
interface KeyPattern {
  hostParts: string[];
  port: string;
  path: string;
}

/**
 * Parses an `auths` key the way kubelet does: an optional http(s):// scheme is dropped, a leading
 * /v1/ or /v2/ path means the host itself, anything else is a repository path prefix.
 */
function parseKey(key: string): KeyPattern | undefined {
  const rest = key.trim().replace(/^https?:\/\//i, '');
  const slash = rest.indexOf('/');
  const hostport = slash < 0 ? rest : rest.slice(0, slash);
  let path = slash < 0 ? '' : rest.slice(slash);
  if (hostport.includes('@')) return undefined; // userinfo is not part of a registry key
  const t = splitTarget(hostport);
  if (!t || t.hostParts.some((p) => p === '')) return undefined;
  if (path.startsWith('/v1/') || path.startsWith('/v2/')) path = path.slice(3);
  path = path.replace(/\/+$/, '').replace(/^\/+/, '');
  return { ...t, path };
}

function splitTarget(host: string): { hostParts: string[]; port: string } | undefined {
  const m = /^(\[[^\]]+\]|[^:/]+)(?::(\d+))?$/.exec(host.trim());
  if (!m) return undefined;
  return { hostParts: m[1].toLowerCase().split('.'), port: m[2] ?? '' };
}

/** One label against a glob label: `*` any run of characters, `?` one character (no dots either way). */
function labelMatches(glob: string, label: string): boolean {
  if (!/[*?]/.test(glob)) return glob === label;
  const re = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`).test(label);
}

/**
 * True when the host part of an `auths` key matches `host` (host[:port]): same number of labels,
 * each label matching its glob, and exactly the same port (none = none). The key's path is ignored.
 */
export function keyMatchesHost(key: string, host: string): boolean {
  const k = parseKey(key);
  const t = splitTarget(host);
  if (!k || !t) return false;
  return hostMatches(k, t);
}

function hostMatches(k: KeyPattern, t: { hostParts: string[]; port: string }): boolean {
  if (k.port !== t.port) return false;
  if (k.hostParts.length !== t.hostParts.length) return false;
  return k.hostParts.every((g, i) => labelMatches(g, t.hostParts[i]));
}

/** Path prefix by whole segments: `team` matches `team` and `team/app`, not `team-b/app`. */
function pathMatches(prefix: string, repository: string): boolean {
  if (!prefix) return true;
  const r = repository.replace(/^\/+/, '');
  return r === prefix || r.startsWith(`${prefix}/`);
}

/** Docker Hub's names, its token service (auth.docker.io) included: one set of credentials for all. */
const DOCKER_HUB_HOSTS = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io', 'auth.docker.io']);

/** The credentials of one entry; throws when the entry has nothing usable. */
export function entryCredentials(key: string, e: DockerConfigEntry): RegistryAuth {
  if (e.registrytoken) return { token: e.registrytoken };
  if (e.identitytoken) return { identityToken: e.identitytoken, ...(e.username ? { username: e.username } : {}) };
  if (e.auth) {
    let decoded: string;
    try {
      decoded = Buffer.from(e.auth.trim(), 'base64').toString('utf8');
    } catch {
      decoded = '';
    }
    const i = decoded.indexOf(':');
    if (i <= 0) throw new DockerConfigError(`auths entry "${key}": auth must be base64 of username:password`);
    return { username: decoded.slice(0, i), password: decoded.slice(i + 1) };
  }
  if (e.username && e.password !== undefined) return { username: e.username, password: e.password };
  throw new DockerConfigError(
    `auths entry "${key}" has no credentials (set auth, username+password, identitytoken or registrytoken)`,
  );
}

/**
 * The credentials a docker config holds for `host` (host[:port], as in Environment registry.host)
 * and `repository`, matched the way kubelet matches imagePullSecrets:
 *
 * - an optional http(s):// scheme in the key is ignored, `/v1/` or `/v2/` alone means the host;
 * - host labels must match one by one (`*.example.com` matches `a.example.com`, not
 *   `a.b.example.com` nor `example.com`), label globs `*` and `?` are allowed;
 * - the port must be the same (`registry:5000` does not match `registry`, nor the reverse);
 * - a key path must be a prefix of the repository, here by whole path segments (kubelet compares
 *   strings, so there `org/team` would also match `org/team-b`), and the most specific key wins
 *   (keys tried in reverse lexical order, as kubelet does: longer paths and exact hosts before globs).
 *
 * Docker Hub: docker.io, index.docker.io, registry-1.docker.io and its token service auth.docker.io
 * share one set of keys (`https://index.docker.io/v1/` is what `docker login` writes).
 * Undefined when no entry matches: nothing is then sent to that host.
 */
export function credentialsFor(
  dockerConfig: DockerConfig,
  host: string,
  repository: string,
): { entry: string; auth: RegistryAuth } | undefined {
  const t = splitTarget(host);
  if (!t) return undefined;
  const candidates: Array<{ sortKey: string; entry: string }> = [];
  for (const entry of Object.keys(dockerConfig.auths)) {
    const k = parseKey(entry);
    if (!k) continue;
    const hostOk =
      hostMatches(k, t) ||
      (DOCKER_HUB_HOSTS.has(t.hostParts.join('.')) &&
        !t.port &&
        !k.port &&
        DOCKER_HUB_HOSTS.has(k.hostParts.join('.')));
    if (!hostOk || !pathMatches(k.path, repository)) continue;
    candidates.push({
      sortKey: `${k.hostParts.join('.')}${k.port ? `:${k.port}` : ''}${k.path ? `/${k.path}` : ''}`,
      entry,
    });
  }
  if (!candidates.length) return undefined;
  candidates.sort((a, b) => (a.sortKey < b.sortKey ? 1 : a.sortKey > b.sortKey ? -1 : a.entry < b.entry ? -1 : 1));
  const best = candidates[0].entry;
  return { entry: best, auth: entryCredentials(best, dockerConfig.auths[best]) };
}
