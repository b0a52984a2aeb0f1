/**
 * A URL safe for logs and status messages: no userinfo, query or fragment (where tokens live).
 * `path: false` also drops the path, for webhook URLs whose path is the credential (Slack, Discord,
 * Teams incoming webhooks); it becomes "/…" so readers see something was left out.
 */
export function redactUrl(u: string | URL, opts: { path?: boolean } = {}): string {
  let url: URL;
  try {
    url = new URL(String(u));
  } catch {
    return '<invalid url>';
  }
  if (opts.path === false) return `${url.protocol}//${url.host}${url.pathname === '/' ? '/' : '/…'}`;
  return `${url.protocol}//${url.host}${url.pathname}`;
}
