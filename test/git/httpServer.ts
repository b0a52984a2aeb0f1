import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** One request the git HTTP server saw (`user` when it carried valid Basic credentials). */
export interface GitHttpRequest {
  method: string;
  path: string;
  authorization?: string;
  user?: string;
}

export interface GitHttpServer {
  /** http://127.0.0.1:<port> */
  baseUrl: string;
  /** URL of a repository under `root`, e.g. url('remote.git'). */
  url(repo: string): string;
  requests: GitHttpRequest[];
  stop(): Promise<void>;
}

/**
 * Real git smart HTTP (`git http-backend` as CGI) for the bare repositories under `root`, behind
 * HTTP Basic auth with `users` (401 with a Basic challenge otherwise). `delayMs` holds every
 * receive-pack (push) response that long, so the pushing git processes stay alive meanwhile.
 */
export async function startGitHttpServer(opts: {
  root: string;
  users: Record<string, string>;
  delayMs?: number;
}): Promise<GitHttpServer> {
  const requests: GitHttpRequest[] = [];
  const userOf = (req: IncomingMessage): string | undefined => {
    const a = req.headers.authorization;
    if (!a?.startsWith('Basic ')) return undefined;
    const decoded = Buffer.from(a.slice(6), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    const [user, pass] = [decoded.slice(0, i), decoded.slice(i + 1)];
    return i > 0 && opts.users[user] === pass ? user : undefined;
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const user = userOf(req);
    requests.push({ method: req.method ?? '', path: url.pathname, authorization: req.headers.authorization, user });
    if (!user) {
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end('authentication required\n');
      return;
    }
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        GIT_PROJECT_ROOT: opts.root,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_USER: user, // enables receive-pack (push)
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
    });
    req.pipe(cgi.stdin);
    const chunks: Buffer[] = [];
    cgi.stdout.on('data', (c: Buffer) => chunks.push(c));
    cgi.on('close', async () => {
      if (opts.delayMs && url.pathname.endsWith('/git-receive-pack')) await sleep(opts.delayMs);
      const out = Buffer.concat(chunks);
      const end = out.indexOf('\r\n\r\n') >= 0 ? out.indexOf('\r\n\r\n') : out.indexOf('\n\n');
      const sep = out.indexOf('\r\n\r\n') >= 0 ? 4 : 2;
      if (end < 0) {
        res.writeHead(500).end('bad CGI output');
        return;
      }
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of out.subarray(0, end).toString('utf8').split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i < 0) continue;
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number.parseInt(v, 10);
        else headers[k] = v;
      }
      res.writeHead(status, headers).end(out.subarray(end + sep));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    url: (repo) => `${baseUrl}/${repo}`,
    requests,
    stop: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
