import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
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
  /** Only a promotion to this environment counts (the predicate's `to`). */
  to?: string;
  /** Only a promotion into this repository counts (`host/repository`, the predicate's target image). */
  targetRepo?: string;
  insecure?: boolean;
}

/** A public key read from a file, with its identity. */
export interface KeyFile {
  path: string;
  flag: '--key' | '--signature-key';
  key: KeyObject;
  /** `sha256:<hex>` of the DER SubjectPublicKeyInfo. */
  fingerprint: string;
}

/** A key's identity: the SHA-256 of its DER SubjectPublicKeyInfo, whatever file it was read from. */
export function fingerprint(key: KeyObject): string {
  return `sha256:${createHash('sha256')
    .update(key.export({ type: 'spki', format: 'der' }))
    .digest('hex')}`;
}

/** A PEM public key file, read and fingerprinted. */
function keyFile(path: string, flag: KeyFile['flag']): KeyFile {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(
      `${flag} ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`,
    );
  }
  if (/PRIVATE KEY/.test(pem)) throw new UsageError(`${flag} ${path} holds a private key; pass the public key`);
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    throw new UsageError(`${flag} ${path} is not a PEM public key`);
  }
  return { path, flag, key, fingerprint: fingerprint(key) };
}

/**
 * Pure: the promotion and signature keys as the verifier's trusted keys. A key is told apart from
 * another by its fingerprint, never its file name: the report sorts statements by the name of the key
 * that verified them, so each name carries the fingerprint (16 hex digits, all 64 should two keys
 * share those) and one name is one key. One key under both flags is refused: a key that signs builds
 * would then also vouch for promotions. The same key twice under one flag counts once.
 */
export function keyRoles(files: KeyFile[]): { promotionKeys: TrustedKey[]; signatureKeys: TrustedKey[] } {
  const roleOf = new Map<string, KeyFile>();
  for (const f of files) {
    const seen = roleOf.get(f.fingerprint);
    if (seen && seen.flag !== f.flag) {
      const [p, s] = seen.flag === '--key' ? [seen, f] : [f, seen];
      throw new UsageError(
        `--key ${p.path} and --signature-key ${s.path} are the same key (${f.fingerprint}): the key kpromo signs promotions with must not be the build's; pass each key under one flag only`,
      );
    }
    if (!seen) roleOf.set(f.fingerprint, f);
  }
  const unique = [...roleOf.values()];
  const short = (f: KeyFile) => f.fingerprint.slice(0, 'sha256:'.length + 16);
  const clash = new Set(unique.map(short)).size < unique.length;
  const named = unique.map((f) => ({
    flag: f.flag,
    trusted: { name: `${basename(f.path)} (${clash ? f.fingerprint : short(f)})`, key: f.key },
  }));
  return {
    promotionKeys: named.filter((k) => k.flag === '--key').map((k) => k.trusted),
    signatureKeys: named.filter((k) => k.flag === '--signature-key').map((k) => k.trusted),
  };
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

/** The report `kpromo verify` prints: promotions that match `--to`/`--target-repo`, and those that verified but went elsewhere. */
export interface VerifyReport extends ImageReport {
  /** Verified promotions to another environment or repository than `--to`/`--target-repo` asked for: they count for nothing. */
  elsewhere: ImageReport['promotions'];
  /** What a promotion had to match, when asked. */
  required?: { to?: string; targetRepo?: string };
}

type Promotion = ImageReport['promotions'][number];

/** Pure: `host/repository` of a promotion's target image (`host/repository:tag@digest`). */
export function targetRepository(p: Promotion['predicate']): string | undefined {
  const image = typeof p?.target?.image === 'string' ? p.target.image : undefined;
  if (!image) return undefined;
  const named = image.replace(/@.*$/, '');
  const colon = named.lastIndexOf(':');
  return colon > named.lastIndexOf('/') ? named.slice(0, colon) : named;
}

/**
 * Pure: the promotions that count, given what the user requires. Without `--to`/`--target-repo`
 * every verified promotion counts; with them, only one to that environment and into that repository.
 */
export function requirePromotion(report: ImageReport, required: VerifyReport['required']): VerifyReport {
  if (!required?.to && !required?.targetRepo) return { ...report, elsewhere: [] };
  const matches = (p: Promotion) =>
    (!required.to || p.predicate?.to === required.to) &&
    (!required.targetRepo || targetRepository(p.predicate) === required.targetRepo);
  return {
    ...report,
    promotions: report.promotions.filter(matches),
    elsewhere: report.promotions.filter((p) => !matches(p)),
    required,
  };
}

/**
 * `kpromo verify <image>`: the promotion attestations of an image, verified with the promotion
 * keys, and the build's signatures and attestations with the signature keys. The registry is the
 * one the user names, read with the user's docker credentials: nobody else chooses where it goes,
 * so no egress restriction applies. Exit 7 when no promotion attestation verifies (and matches
 * `--to`/`--target-repo` when given).
 */
export async function verifyCommand(image: string, o: VerifyOptions): Promise<VerifyReport> {
  if (!o.key?.length)
    throw new UsageError('--key <public key file> is required (the key kpromo signs promotions with)');
  const { promotionKeys, signatureKeys } = keyRoles([
    ...o.key.map((k) => keyFile(k, '--key')),
    ...(o.signatureKey ?? []).map((k) => keyFile(k, '--signature-key')),
  ]);
  if (o.to !== undefined && !o.to)
    throw new UsageError('--to needs an environment name (the Environment a promotion went to, e.g. prod)');
  if (o.targetRepo !== undefined) {
    const t = parseImage(o.targetRepo);
    if (`${t.host}/${t.repository}` !== o.targetRepo)
      throw new UsageError(
        `--target-repo ${JSON.stringify(o.targetRepo)} must be host/repository without tag or digest, e.g. registry.example.com/prod/cart`,
      );
  }
  const { host, repository, reference } = parseImage(image);
  const auth = dockerAuth(host, repository);
  const egress = new Egress({ allowedCidrs: ['0.0.0.0/0', '::/0'] });
  try {
    const client = new RegistryClient({ host, insecure: o.insecure, ...(auth ? { auth } : {}) }, undefined, egress);
    const report = await verifyImage(client, repository, reference, promotionKeys, signatureKeys);
    return requirePromotion(report, {
      ...(o.to ? { to: o.to } : {}),
      ...(o.targetRepo ? { targetRepo: o.targetRepo } : {}),
    });
  } finally {
    await egress.close();
  }
}

/** One promotion in a few words: where from and to, into which repository, by which plan. */
const moveText = (x: Promotion['predicate']) =>
  `${printable(String(x?.from))} -> ${printable(String(x?.to))} into ${printable(targetRepository(x) ?? '?')} (plan ${printable(String(x?.plan?.namespace))}/${printable(String(x?.plan?.name))})`;

/** Fails (exit 7) unless a promotion attestation verified (and matched); says what was found instead. */
export function requireVerified(r: VerifyReport): void {
  if (r.promotions.length) return;
  const asked = [
    ...(r.required?.to ? [`environment ${r.required.to}`] : []),
    ...(r.required?.targetRepo ? [`repository ${r.required.targetRepo}`] : []),
  ];
  const found = r.elsewhere?.length ? `; found: ${r.elsewhere.map((x) => moveText(x.predicate)).join(', ')}` : '';
  const why = r.rejected.length ? `; rejected: ${r.rejected.map((x) => x.problem).join('; ')}` : '';
  throw new CliFailure(
    EXIT.UNVERIFIED,
    `no promotion attestation of ${r.image} verifies with the given keys${asked.length ? ` for ${asked.join(' and ')}` : ''}${found}${why}`,
  );
}

/** The chain in words: who built and signed it, then each move with who asked and who approved. */
export function verifyText(r: VerifyReport): string {
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
        `  approved by   ${p(a.user)}${a.groups?.length ? ` (${a.groups.map(p).join(', ')})` : ''}${a.person && a.person !== a.user ? ` as ${p(a.person)}` : ''}${a.observedAt ? ` at ${p(a.observedAt)}` : ''}${a.counted === false ? ', not counted' : ''}`,
      );
    if (!x.approvals.length) lines.push('  approved by   policy (automatic stage)');
    lines.push(`  from          ${p(x.source.image)}${x.source.tag ? ` (tag ${p(x.source.tag)})` : ''}`);
    if (x.sourceSignatures)
      lines.push(`  source check  ${p(x.sourceSignatures.verdict)}: ${p(x.sourceSignatures.message)}`);
  }
  for (const { predicate: x, signedBy } of r.elsewhere ?? [])
    lines.push(
      `elsewhere ${moveText(x)} at ${p(String(x?.promotedAt))}, attestation signed by ${p(signedBy)}: not the ${[
        ...(r.required?.to && x?.to !== r.required.to ? ['environment'] : []),
        ...(r.required?.targetRepo && targetRepository(x) !== r.required.targetRepo ? ['repository'] : []),
      ].join(' or ')} asked for`,
    );
  for (const x of r.rejected)
    lines.push(`rejected  ${p(x.predicateType ?? 'bundle')} ${p(x.manifestDigest)}: ${p(x.problem)}`);
  return `${lines.join('\n')}\n`;
}
