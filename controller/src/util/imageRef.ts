/** Parsed `host[:port]/repo/path[:tag][@digest]`. */
export interface ImageRef {
  host?: string;
  repository: string;
  tag?: string;
  digest?: string;
}

export function parseImageRef(image: string): ImageRef {
  let rest = image.trim();
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  let host: string | undefined;
  const firstSlash = rest.indexOf('/');
  if (firstSlash > 0) {
    const first = rest.slice(0, firstSlash);
    // Same rule as the docker reference grammar: a first component with '.', ':' or 'localhost' is a host.
    if (first.includes('.') || first.includes(':') || first === 'localhost') {
      host = first;
      rest = rest.slice(firstSlash + 1);
    }
  }
  return { host, repository: rest, tag, digest };
}

export function formatImageRef(r: ImageRef): string {
  return `${r.host ? `${r.host}/` : ''}${r.repository}${r.tag ? `:${r.tag}` : ''}${r.digest ? `@${r.digest}` : ''}`;
}

/** Repository path inside a registry, honouring an Environment registry prefix. */
export function registryRepository(prefix: string | undefined, repository: string): string {
  return prefix ? `${prefix.replace(/\/+$/, '')}/${repository}` : repository;
}
