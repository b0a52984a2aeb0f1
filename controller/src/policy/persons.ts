import { z } from 'zod';

// Every door names a human differently: `user:default/alice` (Backstage), `port:alice@example.com`
// (Port), `alice@example.com` (an OIDC email claim, kubectl). Approval policies judge persons, so
// one human never gives two approvals of `count: 2` nor approves their own plan from another door.
// The mapping is the platform's (controller config): the controller decides a person from the user
// string admission verified, never from anything a tenant or a request body wrote.

const NO_CONTROL = /^[^\p{Cc}]+$/u;
const name = (what: string) =>
  z
    .string()
    .min(1, `${what} must not be empty`)
    .max(253, `${what} must be at most 253 characters`)
    .regex(NO_CONTROL, `${what} must not contain control characters`);

const REST = '{rest}';

/**
 * `persons:` of the controller config: which identities (Kubernetes user names, as admission sees
 * them in an approval's `user` and in `spec.requestedBy`) are one person. `identities` maps exact
 * names; `prefixes` maps every name starting with `prefix` to `person` with `{rest}` replaced by
 * what follows the prefix. An exact entry wins, then the longest prefix; an identity nothing maps is
 * its own person.
 */
export const PersonsConfigSchema = z
  .object({
    identities: z
      .record(name('an identity'), name('a person'))
      .default({})
      .describe('Exact identity -> person, e.g. "user:default/alice": alice@example.com'),
    prefixes: z
      .array(
        z
          .object({
            prefix: name('prefix').describe('e.g. "port:" or "user:default/"'),
            person: name('person')
              .refine((p) => p.split(REST).length === 2, `person must contain ${REST} exactly once`)
              .describe(`The person, ${REST} being what follows the prefix, e.g. "${REST}" or "${REST}@example.com"`),
          })
          .strict(),
      )
      .default([])
      .superRefine((list, ctx) => {
        const seen = new Set<string>();
        list.forEach((r, i) => {
          if (seen.has(r.prefix))
            ctx.addIssue({ code: 'custom', path: [i, 'prefix'], message: `"${r.prefix}" is listed twice` });
          seen.add(r.prefix);
        });
      })
      .describe('Identities starting with prefix -> person'),
  })
  .strict();

export type PersonMapping = z.infer<typeof PersonsConfigSchema>;
export const PERSONS_DEFAULTS: PersonMapping = { identities: {}, prefixes: [] };

/**
 * Pure: the person `user` is, by the platform's mapping (none: every identity is its own person).
 * Persons are compared exactly, as identities are.
 */
export function personOf(user: string, mapping: PersonMapping | undefined): string {
  if (!mapping) return user;
  // Own keys only: an identity named "constructor" or "__proto__" is not Object's.
  if (Object.hasOwn(mapping.identities, user)) return mapping.identities[user];
  let best: PersonMapping['prefixes'][number] | undefined;
  for (const r of mapping.prefixes)
    if (user.length > r.prefix.length && user.startsWith(r.prefix) && r.prefix.length > (best?.prefix.length ?? -1))
      best = r;
  if (!best) return user;
  const rest = user.slice(best.prefix.length);
  // A function replacer: `$&` or `$'` in an identity are text, not replacement patterns.
  return best.person.replace(REST, () => rest);
}

/** `user`, and the person it is when that differs: how messages name an approver. */
export function userAsPerson(user: string, person: string): string {
  return person === user ? user : `${user} (${person})`;
}
