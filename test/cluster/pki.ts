import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Certificates come from the openssl CLI: a real CA, serving certs with loopback SANs and client
// certs whose O= is the Kubernetes group, exactly as kubeadm lays them out.

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  saKey: string;
  saPub: string;
}

export function ensureCa(dir: string): Pki {
  mkdirSync(dir, { recursive: true });
  const pki: Pki = {
    dir,
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    saKey: join(dir, 'sa.key'),
    saPub: join(dir, 'sa.pub'),
  };
  if (!existsSync(pki.caCert)) {
    openssl(
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        'ca.key',
        '-out',
        'ca.crt',
        '-days',
        '3650',
        '-subj',
        '/CN=kpromo-local-ca',
      ],
      dir,
    );
  }
  if (!existsSync(pki.saKey)) {
    openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
    openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  }
  return pki;
}

/** Issues `<name>.crt/.key` signed by the CA; idempotent. */
export function ensureCert(
  pki: Pki,
  name: string,
  opts: { cn: string; org?: string; sans?: string[]; server?: boolean },
): { cert: string; key: string } {
  const cert = join(pki.dir, `${name}.crt`);
  const key = join(pki.dir, `${name}.key`);
  if (existsSync(cert) && existsSync(key)) return { cert, key };
  const ext = join(pki.dir, `${name}.ext`);
  const lines = [
    'basicConstraints=CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage=${opts.server ? 'serverAuth,clientAuth' : 'clientAuth'}`,
  ];
  if (opts.sans?.length) lines.push(`subjectAltName=${opts.sans.join(',')}`);
  writeFileSync(ext, `${lines.join('\n')}\n`);
  const subj = `/CN=${opts.cn}${opts.org ? `/O=${opts.org}` : ''}`;
  openssl(
    ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subj],
    pki.dir,
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '3650',
      '-extfile',
      ext,
    ],
    pki.dir,
  );
  return { cert, key };
}
