import { createServer } from 'node:net';

const canListen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });

/**
 * A base port for a private control plane of `clusters` clusters whose whole block (etcd base..+1,
 * cluster i at base+10*i..+3) is free, below the ephemeral range.
 */
export async function freePortBlock(clusters = 1): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const base = 21000 + Math.floor(Math.random() * 900) * 10;
    const ports = [base, base + 1];
    for (let c = 1; c <= clusters; c++)
      ports.push(base + 10 * c, base + 10 * c + 1, base + 10 * c + 2, base + 10 * c + 3);
    if ((await Promise.all(ports.map(canListen))).every(Boolean)) return base;
  }
  throw new Error('no free block of ports found in 21000-31000');
}
