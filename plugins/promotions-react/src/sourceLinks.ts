// Links for the real diff: where an image comes from (its OCI source/revision labels), where it is
// (registry web pages), and the GitOps commit delivery wrote. Labels are written by whoever built
// the image and repository URLs come from custom resources: every URL here is attacker-controlled
// input. Only http(s) URLs without credentials are ever linked, and commit/compare links are built
// only on the source URL's own host, with a path pattern the host is known to serve.

/** An http(s) URL fit for an href (no credentials, no other scheme such as javascript:), or undefined. */
export function safeHttpUrl(value: string | undefined): string | undefined {
  if (!value || value.length > 2048) return undefined;
  let u: URL;
  try {
    u = new URL(value.trim());
  } catch {
    return undefined;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return undefined;
  if (u.username || u.password || !u.hostname) return undefined;
  return u.href;
}

/** How a forge lays out commit and compare pages. */
export type ForgeStyle = 'github' | 'gitlab';

export interface SourceRepository {
  /** The repository's web page, e.g. https://github.com/org/app. */
  url: string;
  /** Host and path, e.g. github.com/org/app. */
  name: string;
  style: ForgeStyle;
}

const SEGMENT = /^[A-Za-z0-9_.-]{1,100}$/;
/** A git revision we link to: an abbreviated or full SHA-1/SHA-256 commit id. */
const REVISION = /^[0-9a-f]{7,64}$/i;

/**
 * Pure: the repository a source URL names, when it has the shape of a repository on a forge:
 * github.com/<owner>/<repo>, gitlab.com/<group>/…/<project>, or another host (self-hosted GitHub,
 * Gitea, Forgejo: GitHub's layout; a host named gitlab.*: GitLab's) with the same path patterns.
 * `git+https://` and `.git` suffixes are accepted; anything else is no repository.
 */
export function sourceRepository(source: string | undefined): SourceRepository | undefined {
  const href = safeHttpUrl(source?.trim().replace(/^git\+(?=https?:)/, ''));
  if (!href) return undefined;
  const u = new URL(href);
  if (u.search || u.hash) return undefined;
  const segments = u.pathname
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .split('/')
    .filter(Boolean);
  if (segments.length < 2 || !segments.every((s) => SEGMENT.test(s) && s !== '.' && s !== '..' && s !== '-'))
    return undefined;
  const host = u.host.toLowerCase();
  const style: ForgeStyle = host === 'gitlab.com' || host.startsWith('gitlab.') ? 'gitlab' : 'github';
  // GitHub-style paths are exactly owner/repo; GitLab nests groups.
  if (style === 'github' && segments.length !== 2) return undefined;
  const path = segments.join('/');
  return { url: `${u.protocol}//${u.host}/${path}`, name: `${host}/${path}`, style };
}

/** Pure: a revision fit for a link (a commit id), lower-cased, or undefined. */
export function commitRevision(revision: string | undefined): string | undefined {
  const r = revision?.trim();
  return r && REVISION.test(r) ? r.toLowerCase() : undefined;
}

/** The page of one commit of the repository. */
export function commitUrl(repo: SourceRepository, revision: string | undefined): string | undefined {
  const r = commitRevision(revision);
  if (!r) return undefined;
  return repo.style === 'gitlab' ? `${repo.url}/-/commit/${r}` : `${repo.url}/commit/${r}`;
}

/** The changes between two commits of the repository (what the promotion brings). */
export function compareUrl(
  repo: SourceRepository,
  fromRevision: string | undefined,
  toRevision: string | undefined,
): string | undefined {
  const a = commitRevision(fromRevision);
  const b = commitRevision(toRevision);
  if (!a || !b || a === b) return undefined;
  return repo.style === 'gitlab' ? `${repo.url}/-/compare/${a}...${b}` : `${repo.url}/compare/${a}...${b}`;
}

/** Source links of a promotion: the new image's commit and, when both images say, the changes between them. */
export interface SourceLinks {
  repository?: SourceRepository;
  commit?: { url: string; revision: string };
  changes?: string;
  /** The new image's org.opencontainers.image.url, when it is an http(s) URL. */
  imageInfo?: string;
}

/**
 * Pure: the links for promoting an image built from `to` over one built from `from` (labels of
 * each). The comparison needs both revisions in the same repository.
 */
export function sourceLinks(
  to: { source?: string; revision?: string; url?: string } | undefined,
  from?: { source?: string; revision?: string },
): SourceLinks {
  const out: SourceLinks = {};
  const info = safeHttpUrl(to?.url);
  if (info) out.imageInfo = info;
  const repo = sourceRepository(to?.source);
  if (!repo) return out;
  out.repository = repo;
  const revision = commitRevision(to?.revision);
  const url = commitUrl(repo, revision);
  if (url && revision) out.commit = { url, revision };
  const before = sourceRepository(from?.source);
  if (before?.name.toLowerCase() === repo.name.toLowerCase()) {
    const changes = compareUrl(repo, from?.revision, revision);
    if (changes) out.changes = changes;
  }
  return out;
}

/**
 * Pure: the web page of an image repository on the public registries that have one (Docker Hub,
 * GitHub Container Registry, Quay); undefined for other registries, whose web UI we cannot know.
 */
export function registryImageUrl(registry: string, repository: string, digest?: string): string | undefined {
  const host = registry.toLowerCase();
  const path = repository.split('/').filter(Boolean);
  if (!path.length || !path.every((s) => /^[a-z0-9][a-z0-9._-]{0,127}$/.test(s))) return undefined;
  const d = digest && /^sha256:[a-f0-9]{64}$/.test(digest) ? digest : undefined;
  if (host === 'docker.io' || host === 'index.docker.io' || host === 'registry-1.docker.io') {
    if (path.length === 1 || (path.length === 2 && path[0] === 'library'))
      return `https://hub.docker.com/_/${path[path.length - 1]}`;
    return path.length === 2 ? `https://hub.docker.com/r/${path.join('/')}` : undefined;
  }
  if (host === 'ghcr.io') return `https://ghcr.io/${path.join('/')}`;
  if (host === 'quay.io') return `https://quay.io/repository/${path.join('/')}${d ? `/manifest/${d}` : ''}`;
  return undefined;
}

/** Pure: the commit page of a GitOps repository URL (from an Environment), or undefined. */
export function gitCommitUrl(repository: string | undefined, commit: string | undefined): string | undefined {
  const repo = sourceRepository(repository);
  return repo ? commitUrl(repo, commit) : undefined;
}

/** `abc1234` for a commit id: what git shows. */
export const shortSha = (sha: string) => sha.slice(0, 7);
