import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the proxy saw: the Basic user it carried (valid or not), or none. */
export interface SeenCredentials {
  method: string;
  path: string;
  /** Username of a Basic Authorization header, `Bearer` for a bearer token, undefined for none. */
  user?: string;
  valid: boolean;
}

/**
 * A real registry behind HTTP Basic auth: requests without valid `users` credentials get 401 with a
 * Basic challenge (as distribution's htpasswd auth answers), others pass through to `target`
 * (host:port). The Host header is kept, so the registry's upload Locations point here. Every
 * request's credentials are recorded, to check which credentials reached which registry.
 */
export async function startBasicAuthProxy(opts: { target: string; users: Record<string, string> }): Promise<{
  host: string;
  seen: SeenCredentials[];
  stop(): Promise<void>;
}> {
  const seen: SeenCredentials[] = [];
  const [targetHost, targetPort] = opts.target.split(':');
  const server = createServer((req, res) => {
    const a = req.headers.authorization;
    let user: string | undefined;
    let valid = false;
    if (a?.startsWith('Basic ')) {
      const decoded = Buffer.from(a.slice(6), 'base64').toString('utf8');
      const i = decoded.indexOf(':');
      user = i >= 0 ? decoded.slice(0, i) : decoded;
      valid = i > 0 && opts.users[user] === decoded.slice(i + 1);
    } else if (a) user = a.split(' ')[0];
    seen.push({ method: req.method ?? '', path: req.url ?? '', user, valid });
    if (!valid) {
      req.resume();
      res
        .writeHead(401, { 'www-authenticate': 'Basic realm="kpromo-test"', 'content-type': 'application/json' })
        .end('{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}');
      return;
    }
    const headers = { ...req.headers };
    delete headers.authorization;
    const upstream = request(
      { host: targetHost, port: Number(targetPort), method: req.method, path: req.url, headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
