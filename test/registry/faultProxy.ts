import { createServer, type IncomingMessage, request } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with a request while a fault is on. */
export type FaultMode = 'pass' | 'error' | 'hang' | 'reset';

/**
 * A pass-through HTTP proxy in front of a real registry that answers the first `failures` requests
 * matching `match` with `status` (e.g. 503/429), to test client retries against real registry
 * behaviour instead of a fake. The Host header is kept so the registry's Location URLs point here.
 * `setMode` switches faults on for a period: `error` (status), `hang` (never answers: the client's
 * timeout fires) or `reset` (the connection is destroyed), and `pass` again.
 */
export async function startFaultProxy(opts: {
  target: string; // host:port of the real registry
  failures: number;
  status?: number;
  headers?: Record<string, string>;
  match?: (req: IncomingMessage) => boolean;
}): Promise<{
  host: string;
  failed: () => number;
  requests: () => number;
  setMode(mode: FaultMode): void;
  stop(): Promise<void>;
}> {
  let failed = 0;
  let requests = 0;
  let mode: FaultMode = 'pass';
  const [targetHost, targetPort] = opts.target.split(':');
  const server = createServer((req, res) => {
    requests++;
    if (mode === 'hang') {
      failed++;
      req.resume();
      return;
    }
    if (mode === 'reset') {
      failed++;
      req.socket.destroy();
      return;
    }
    if (mode === 'error' || (failed < opts.failures && (opts.match?.(req) ?? true))) {
      failed++;
      req.resume();
      res.writeHead(opts.status ?? 503, { 'content-type': 'application/json', ...opts.headers });
      res.end('{"errors":[{"code":"UNAVAILABLE","message":"injected fault"}]}');
      return;
    }
    const upstream = request(
      { host: targetHost, port: Number(targetPort), method: req.method, path: req.url, headers: req.headers },
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
    failed: () => failed,
    requests: () => requests,
    setMode: (m: FaultMode) => {
      mode = m;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
