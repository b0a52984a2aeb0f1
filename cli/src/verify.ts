import { createPublicKey } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { credentialsFor, Egress, parseDockerConfig, RegistryClient } from '@kpromo/controller/oci';
import { type ImageReport, isImageSignature, type TrustedKey, verifyImage } from '@kpromo/controller/supplychain';
import { CliFailure, EXIT, UsageError } from './exitCodes.js';
import { printable } from './table.js';

export interface VerifyOptions {
  key: string[];
  signatureKey?: string[];
  insecure?: boolean;
}

/** A PEM public key file as a trusted key named by its file name. */
function keyFile(path: string, flag: string): TrustedKey {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(
      `${flag} ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`,
    );
  }
  if (/PRIVATE KEY/.test(pem)) throw new UsageError(`${flag} ${path} holds a private key; pass the public key`);
  try {
    return { name: basename(path), key: createPublicKey(pem) };
  } catch {
    throw new UsageError(`${flag} ${path} is not a PEM public key`);
  }
}

/** `host/repository[:tag|@digest]` split for the registry client. */
function parseImage(image: string): { host: string; repository: string; reference: string } {
  const m = /^([^/]+)\/([a-z0-9]+(?:[._/-][a-z0-9]+)*)(?::([\w][\w.-]{0,127}))?(?:@(sha256:[a-f0-9]{64}))?$/.exec(
    image,
  );
  if (!m || !(m[1].includes('.') || m[1].includes(':') || m[1] === 'localhost'))
    throw new UsageError(
      `image ${JSON.stringify(image)} must be host/repository[:tag][@sha256:<digest>], e.g. registry.example.com/shop/cart@sha256:…`,
    );
  return { host: m[1], repository: m[2], reference: m[4] ?? m[3] ?? 'latest' };
}

/** Registry credentials of the user: the docker config's entry for this host and repository, if any. */
function dockerAuth(host: string, repository: string) {
  const file = join(process.env.DOCKER_CONFIG ?? join(homedir(), '.docker'), 'config.json');
  if (!existsSync(file)) return undefined;
  try {
    return credentialsFor(parseDockerConfig(readFileSync(file, 'utf8')), host, repository)?.auth;
  } catch (e) {
    throw new UsageError(`${file}: ${(e as Error).message}`);
  }
}

/**
 * `kpromo verify <image>`: the promotion attestations of an image, verified with the promotion
 * keys, and the build's signatures and attestations with the signature keys. The registry is the
 * one the user names, read with the user's docker credentials: nobody else chooses where it goes,
 * so no egress restriction applies. Exit 7 when no promotion attestation verifies.
 */
export async function verifyCommand(image: string, o: VerifyOptions): Promise<ImageReport> {
  if (!o.key?.length)
    throw new UsageError('--key <public key file> is required (the key kpromo signs promotions with)');
  const promotionKeys = o.key.map((k) => keyFile(k, '--key'));
  const signatureKeys = (o.signatureKey ?? []).map((k) => keyFile(k, '--signature-key'));
  const { host, repository, reference } = parseImage(image);
  const auth = dockerAuth(host, repository);
  const egress = new Egress({ allowedCidrs: ['0.0.0.0/0', '::/0'] });
  try {
    const client = new RegistryClient({ host, insecure: o.insecure, ...(auth ? { auth } : {}) }, undefined, egress);
    return await verifyImage(client, repository, reference, promotionKeys, signatureKeys);
  } finally {
    await egress.close();
  }
}

/** Fails (exit 7) unless a promotion attestation verified; says what was found instead. */
export function requireVerified(r: ImageReport): void {
  if (r.promotions.length) return;
  const why = r.rejected.length ? `; rejected: ${r.rejected.map((x) => x.problem).join('; ')}` : '';
  throw new CliFailure(EXIT.UNVERIFIED, `no promotion attestation of ${r.image} verifies with the given keys${why}`);
}

/** The chain in words: who built and signed it, then each move with who asked and who approved. */
export function verifyText(r: ImageReport): string {
  const p = (s: string) => printable(s);
  const lines = [`image     ${p(r.image)}`];
  for (const e of r.evidence)
    lines.push(
      isImageSignature(e.predicateType)
        ? `signed    by ${p(e.signedBy)}`
        : `attested  ${p(e.predicateType)} by ${p(e.signedBy)}${e.builder ? `, built by ${p(e.builder)}` : ''}`,
    );
  for (const { predicate: x, signedBy } of r.promotions) {
    lines.push(
      `promoted  ${p(x.from)} -> ${p(x.to)} at ${p(x.promotedAt)} by plan ${p(x.plan.namespace)}/${p(x.plan.name)} (flow ${p(x.flow)}), attestation signed by ${p(signedBy)}`,
    );
    if (x.requestedBy) lines.push(`  requested by  ${p(x.requestedBy)}`);
    for (const a of x.approvals)
      lines.push(
        `  approved by   ${p(a.user)}${a.groups?.length ? ` (${a.groups.map(p).join(', ')})` : ''}${a.observedAt ? ` at ${p(a.observedAt)}` : ''}`,
      );
    if (!x.approvals.length) lines.push('  approved by   policy (automatic stage)');
    lines.push(`  from          ${p(x.source.image)}${x.source.tag ? ` (tag ${p(x.source.tag)})` : ''}`);
    if (x.sourceSignatures)
      lines.push(`  source check  ${p(x.sourceSignatures.verdict)}: ${p(x.sourceSignatures.message)}`);
  }
  for (const x of r.rejected)
    lines.push(`rejected  ${p(x.predicateType ?? 'bundle')} ${p(x.manifestDigest)}: ${p(x.problem)}`);
  return `${lines.join('\n')}\n`;
}
