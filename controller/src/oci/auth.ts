/** Parses `Bearer realm="…",service="…",scope="…"` (RFC 6750 challenge as registries send it). */
export function parseChallenge(header: string | null): { scheme: string; params: Record<string, string> } | undefined {
  if (!header) return undefined;
  const m = /^\s*(\w+)\s*(.*)$/s.exec(header);
  if (!m) return undefined;
  const params: Record<string, string> = {};
  for (const p of m[2].matchAll(/([a-zA-Z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g)) {
    params[p[1].toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : p[3];
  }
  return { scheme: m[1].toLowerCase(), params };
}

/** Token service URL for a Bearer challenge and the scopes one operation needs. */
export function tokenUrl(params: Record<string, string>, scopes: string[]): string {
  if (!params.realm) throw new Error('Bearer challenge without realm');
  const url = new URL(params.realm);
  if (params.service) url.searchParams.set('service', params.service);
  for (const s of scopes) url.searchParams.append('scope', s);
  return url.toString();
}

export function basicAuth(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}
