import { describe, expect, it } from 'vitest';
import { type PersonMapping, PersonsConfigSchema, personOf, userAsPerson } from '../../src/policy/persons.js';

const mapping: PersonMapping = PersonsConfigSchema.parse({
  identities: {
    'user:default/alice': 'alice@example.com',
    'https://idp.example.com#1234': 'alice@example.com',
    'port:alice@example.com': 'alice@corp.example.com',
  },
  prefixes: [
    { prefix: 'port:', person: '{rest}' },
    { prefix: 'user:default/', person: '{rest}@example.com' },
    { prefix: 'user:default/ext-', person: '{rest}@partner.example.com' },
    { prefix: 'oidc:', person: '{rest}' },
  ],
});

describe('personOf', () => {
  it.each([
    // Backstage user entity ref -> the profile email, by an exact entry.
    ['user:default/alice', 'alice@example.com'],
    // An OIDC subject (username claim sub, issuer prefix) -> the person, by an exact entry.
    ['https://idp.example.com#1234', 'alice@example.com'],
    // An exact entry wins over a prefix rule.
    ['port:alice@example.com', 'alice@corp.example.com'],
    // Port: `port:{email}` -> the trigger user's email.
    ['port:bob@example.com', 'bob@example.com'],
    // Backstage by rule (entity names are email local parts).
    ['user:default/bob', 'bob@example.com'],
    // The longest matching prefix wins.
    ['user:default/ext-carol', 'carol@partner.example.com'],
    // OIDC email claim with a username prefix.
    ['oidc:dave@example.com', 'dave@example.com'],
    // An OIDC email claim without prefix, kubectl: unmapped, its own person.
    ['alice@example.com', 'alice@example.com'],
    // Unmapped identities are their own person, exactly (case and all).
    ['kpromo-admin', 'kpromo-admin'],
    ['User:default/bob', 'User:default/bob'],
    ['system:serviceaccount:ci:deployer', 'system:serviceaccount:ci:deployer'],
    // The prefix alone names nobody: it stays itself, never the bare template.
    ['port:', 'port:'],
    // Replacement patterns in an identity are text.
    ["port:a$&b$'c@example.com", "a$&b$'c@example.com"],
    // Object's own properties are no identities.
    ['constructor', 'constructor'],
    ['__proto__', '__proto__'],
    ['toString', 'toString'],
  ])('%s -> %s', (user, person) => {
    expect(personOf(user, mapping)).toBe(person);
  });

  it('without a mapping every identity is its own person', () => {
    expect(personOf('user:default/alice', undefined)).toBe('user:default/alice');
    expect(personOf('port:alice@example.com', PersonsConfigSchema.parse({}))).toBe('port:alice@example.com');
  });

  it('names a user with its person only when they differ', () => {
    expect(userAsPerson('user:default/alice', 'alice@example.com')).toBe('user:default/alice (alice@example.com)');
    expect(userAsPerson('alice@example.com', 'alice@example.com')).toBe('alice@example.com');
  });
});

describe('PersonsConfigSchema', () => {
  const problems = (v: unknown) => {
    const r = PersonsConfigSchema.safeParse(v);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it('defaults to no mapping', () => {
    expect(PersonsConfigSchema.parse({})).toEqual({ identities: {}, prefixes: [] });
  });

  it.each([
    [
      { prefixes: [{ prefix: 'port:', person: 'alice@example.com' }] },
      'prefixes.0.person: person must contain {rest} exactly once',
    ],
    [
      { prefixes: [{ prefix: 'port:', person: '{rest}{rest}' }] },
      'prefixes.0.person: person must contain {rest} exactly once',
    ],
    [{ prefixes: [{ prefix: '', person: '{rest}' }] }, 'prefixes.0.prefix: prefix must not be empty'],
    [
      {
        prefixes: [
          { prefix: 'port:', person: '{rest}' },
          { prefix: 'port:', person: '{rest}@x' },
        ],
      },
      'prefixes.1.prefix: "port:" is listed twice',
    ],
    [{ identities: { 'user:default/alice': '' } }, 'identities.user:default/alice: a person must not be empty'],
    [
      { identities: { 'user:default/alice': 'a\nb' } },
      'identities.user:default/alice: a person must not contain control characters',
    ],
    [{ prefixes: [{ prefix: 'port:', person: '{rest}', extra: 1 }] }, 'prefixes.0: Unrecognized key: "extra"'],
    [{ users: {} }, ': Unrecognized key: "users"'],
  ])('refuses %j', (v, problem) => {
    expect(problems(v)).toContain(problem);
  });
});
