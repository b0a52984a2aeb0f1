// Which configured key a flow gets for what it names: the decision table of trust anchors (keys in
// the controller's namespace, each for the tenant namespaces the platform listed).
import { describe, expect, it } from 'vitest';
import {
  resolveTrustAnchor,
  type SupplyChainConfig,
  SupplyChainConfigSchema,
  type TrustAnchorKind,
} from '../../src/supplychain/trustAnchors.js';

const config: SupplyChainConfig = SupplyChainConfigSchema.parse({
  namespace: 'kpromo',
  trustedKeys: [
    { name: 'build', secret: 'kpromo-build-key', namespaces: ['shop'] },
    { name: 'shared', secret: 'kpromo-shared-key', namespaces: ['team-*', 'shop'] },
    { name: 'nobody', secret: 'kpromo-unused' },
  ],
  signingKeys: [{ name: 'promotion', secret: 'kpromo-promotion-key', namespaces: ['shop'] }],
});

type Ref = { name?: string; secretRef?: { name: string } };
const cases: Array<[string, SupplyChainConfig | undefined, TrustAnchorKind, string, Ref, string]> = [
  ['a key listed for the namespace', config, 'trustedKeys', 'shop', { name: 'build' }, 'ok:kpromo-build-key'],
  [
    'a key listed for the namespace by glob',
    config,
    'trustedKeys',
    'team-a',
    { name: 'shared' },
    'ok:kpromo-shared-key',
  ],
  ['a key configured for another namespace only', config, 'trustedKeys', 'team-a', { name: 'build' }, 'KeyNotAllowed'],
  [
    'a key configured for no namespace (the default)',
    config,
    'trustedKeys',
    'shop',
    { name: 'nobody' },
    'KeyNotAllowed',
  ],
  ['a name nobody configured', config, 'trustedKeys', 'shop', { name: 'mine' }, 'KeyNotConfigured'],
  [
    'a signing key name used as a trusted key',
    config,
    'trustedKeys',
    'shop',
    { name: 'promotion' },
    'KeyNotConfigured',
  ],
  ['any name without supplyChain config', undefined, 'trustedKeys', 'shop', { name: 'build' }, 'KeyNotConfigured'],
  [
    'a Secret of the flow namespace',
    config,
    'trustedKeys',
    'shop',
    { secretRef: { name: 'build' } },
    'KeyInTenantNamespace',
  ],
  [
    'a Secret of the flow namespace next to a name',
    config,
    'signingKeys',
    'shop',
    { name: 'promotion', secretRef: { name: 'x' } },
    'KeyInTenantNamespace',
  ],
  ['nothing named', config, 'signingKeys', 'shop', {}, 'KeyInTenantNamespace'],
  [
    'the signing key for its namespace',
    config,
    'signingKeys',
    'shop',
    { name: 'promotion' },
    'ok:kpromo-promotion-key',
  ],
  ['the signing key from another namespace', config, 'signingKeys', 'team-a', { name: 'promotion' }, 'KeyNotAllowed'],
];

describe('resolveTrustAnchor', () => {
  it.each(cases)('%s', (_title, cfg, kind, ns, ref, want) => {
    const d = resolveTrustAnchor(cfg, kind, ns, `${ns}/main`, 'signaturePolicy.keys[0].name', ref);
    expect(d.ok ? `ok:${d.anchor.secret}` : d.reason).toBe(want);
    if (d.ok) expect(d.namespace).toBe('kpromo');
    else expect(d.message).toMatch(new RegExp(`^PromotionFlow ${ns}/main signaturePolicy\\.keys\\[0\\]\\.name: `));
  });

  it('says what the platform admin must configure, and how to migrate from a Secret of the namespace', () => {
    const refused = (ns: string, ref: Ref, kind: TrustAnchorKind = 'trustedKeys') => {
      const d = resolveTrustAnchor(config, kind, ns, `${ns}/main`, 'signaturePolicy.keys[0].name', ref);
      return d.ok ? '' : d.message;
    };
    expect(refused('team-a', { name: 'build' })).toBe(
      'PromotionFlow team-a/main signaturePolicy.keys[0].name: trusted key "build" may not be used from namespace team-a; a platform admin must allow it: the controller config supplyChain.trustedKeys (name build) namespaces must match "team-a"',
    );
    expect(refused('shop', { name: 'mine' }, 'signingKeys')).toBe(
      'PromotionFlow shop/main signaturePolicy.keys[0].name: signing key "mine" is not configured; a platform admin must add it to the controller config supplyChain.signingKeys (name mine, a Secret in the controller\'s namespace, namespaces matching "shop")',
    );
    expect(refused('shop', { secretRef: { name: 'release-keys' } })).toContain(
      "names Secret shop/release-keys of the flow's own namespace, which kpromo no longer trusts",
    );
    expect(refused('shop', { secretRef: { name: 'release-keys' } })).toContain(
      'docs/supply-chain.md, "Migrating from keys in the flow\'s namespace"',
    );
  });
});

describe('SupplyChainConfigSchema', () => {
  it('defaults the Secret keys and the namespaces to none', () => {
    expect(config.trustedKeys[2]).toEqual({
      name: 'nobody',
      secret: 'kpromo-unused',
      key: 'cosign.pub',
      namespaces: [],
    });
    expect(config.signingKeys[0].key).toBe('key.pem');
  });

  it('refuses keys without the namespace holding them, and a name listed twice', () => {
    const r = SupplyChainConfigSchema.safeParse({
      trustedKeys: [
        { name: 'build', secret: 'a' },
        { name: 'build', secret: 'b' },
      ],
    });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      "namespace: name the controller's own namespace, where the key Secrets live (the Helm chart sets it)",
      'trustedKeys.1.name: "build" is listed twice',
    ]);
  });
});
