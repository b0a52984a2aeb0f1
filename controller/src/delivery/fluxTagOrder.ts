/**
 * The order in which a Flux ImagePolicy (image.toolkit.fluxcd.io/v1 `spec.policy`) prefers tags, as
 * image-reflector-controller ranks them: semver (github.com/Masterminds/semver, highest wins),
 * alphabetical and numerical (`order: asc`, the default, selects the highest). Pure. Used to tell
 * "not scanned yet" from "another release sorts after kpromo's tag, so the policy will never select
 * it". With `spec.filterTags.extract` the policy ranks extracted values, not tags, and kpromo does not
 * run an ImagePolicy's regular expressions (attacker-written, and RE2 rather than JavaScript syntax),
 * so it leaves the order unknown.
 */

export interface FluxPolicyChoice {
  semver?: { range?: string };
  alphabetical?: { order?: string };
  numerical?: { order?: string };
}

/** How a policy ranks two tags: > 0 when it prefers `a` (would select `a` over `b`). */
export type TagPreference = (a: string, b: string) => number;

/** What kpromo can tell about a policy's ranking of a tag. */
export type TagOrder = { prefer: TagPreference; rank: (tag: string) => 'ranked' | 'never' } | { unknown: string };

// Masterminds semver's lenient grammar (NewVersion): optional v, minor and patch.
const SEMVER =
  /^v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

interface Semver {
  core: [bigint, bigint, bigint];
  pre: string;
}

export function parseSemver(tag: string): Semver | undefined {
  const m = SEMVER.exec(tag);
  if (!m) return undefined;
  return { core: [BigInt(m[1]), BigInt(m[2] ?? 0), BigInt(m[3] ?? 0)], pre: m[4] ?? '' };
}

const cmp = <T>(a: T, b: T) => (a > b ? 1 : a < b ? -1 : 0);
const NUMERIC = /^[0-9]+$/;

/** Semver precedence: core, then no prerelease above any, then identifier by identifier. */
export function compareSemver(a: Semver, b: Semver): number {
  for (let i = 0; i < 3; i++) if (a.core[i] !== b.core[i]) return cmp(a.core[i], b.core[i]);
  if (a.pre === b.pre) return 0;
  if (!a.pre) return 1;
  if (!b.pre) return -1;
  const pa = a.pre.split('.');
  const pb = b.pre.split('.');
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const [x, y] = [pa[i], pb[i]];
    if (x === y) continue;
    const [nx, ny] = [NUMERIC.test(x), NUMERIC.test(y)];
    if (nx && ny) return cmp(BigInt(x), BigInt(y));
    if (nx !== ny) return nx ? -1 : 1; // numeric identifiers rank below alphanumeric ones
    return cmp(x, y);
  }
  return cmp(pa.length, pb.length);
}

// strconv.ParseFloat's decimal forms that OCI tag characters allow.
const NUMBER = /^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE]-?[0-9]+)?$/;

/** The ranking of `policy` (and whether a tag can be ranked at all), or why kpromo cannot tell. */
export function tagOrder(policy: FluxPolicyChoice | undefined, extract: string | undefined): TagOrder {
  if (extract) return { unknown: 'its filterTags.extract ranks extracted values, which kpromo does not compute' };
  if (policy?.semver) {
    return {
      prefer: (a, b) => {
        const [x, y] = [parseSemver(a), parseSemver(b)];
        return x && y ? compareSemver(x, y) : x ? 1 : y ? -1 : 0;
      },
      rank: (t) => (parseSemver(t) ? 'ranked' : 'never'),
    };
  }
  const asc = (o: { order?: string }) => (o.order ?? 'asc') !== 'desc';
  if (policy?.alphabetical) {
    const up = asc(policy.alphabetical);
    return { prefer: (a, b) => (up ? cmp(a, b) : cmp(b, a)), rank: () => 'ranked' };
  }
  if (policy?.numerical) {
    const up = asc(policy.numerical);
    return {
      prefer: (a, b) => {
        if (!NUMBER.test(a) || !NUMBER.test(b)) return 0;
        return up ? cmp(Number(a), Number(b)) : cmp(Number(b), Number(a));
      },
      // Other float spellings Go accepts (inf, hex) are not worth guessing at: ranked, order unknown.
      rank: () => 'ranked',
    };
  }
  return { unknown: 'its spec.policy names no ordering kpromo knows (semver, alphabetical, numerical)' };
}
