import { z } from 'zod';
import { globMatch } from '../kube/clusterAccess.js';

const namespaceName = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name');
const anchorName = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be lowercase letters, digits, "-" and "." (what a flow names)');

const anchor = (defaultKey: string, what: string) =>
  z
    .object({
      name: anchorName.describe(`What a flow names (${what})`),
      secret: z
        .string()
        .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a Secret name')
        .describe("Secret in supplyChain.namespace (the controller's own)"),
      key: z.string().min(1).max(253).default(defaultKey).describe(`Key in the Secret's data (default ${defaultKey})`),
      namespaces: z
        .array(z.string().min(1).max(253))
        .default([])
        .describe('Namespaces (globs) whose flows may use it; empty: none'),
    })
    .strict();

/**
 * Trust anchors of the supply chain (docs/supply-chain.md): the public keys signature policies may
 * trust and the private keys promotion attestations are signed with. Platform-owned: the Secrets
 * live in the controller's own namespace, where no tenant writes or reads Secrets, and each key
 * lists the tenant namespaces whose flows may name it. A flow never names a Secret of its own
 * namespace: whoever writes Secrets there could swap the key, whoever reads them could sign.
 */
export const SupplyChainConfigSchema = z
  .object({
    namespace: namespaceName.optional().describe("The controller's own namespace, holding the key Secrets"),
    trustedKeys: z
      .array(anchor('cosign.pub', 'signaturePolicy.keys[].name'))
      .default([])
      .describe('PEM public keys a signature policy may trust'),
    signingKeys: z
      .array(anchor('key.pem', 'promotionAttestation.signingKey'))
      .default([])
      .describe('PEM PKCS#8 private keys promotion attestations may be signed with'),
  })
  .strict()
  .superRefine((c, ctx) => {
    if ((c.trustedKeys.length || c.signingKeys.length) && !c.namespace)
      ctx.addIssue({
        code: 'custom',
        path: ['namespace'],
        message: "name the controller's own namespace, where the key Secrets live (the Helm chart sets it)",
      });
    for (const list of ['trustedKeys', 'signingKeys'] as const) {
      const seen = new Set<string>();
      c[list].forEach((a, i) => {
        if (seen.has(a.name))
          ctx.addIssue({ code: 'custom', path: [list, i, 'name'], message: `"${a.name}" is listed twice` });
        seen.add(a.name);
      });
    }
  });

export const SUPPLY_CHAIN_DEFAULTS = { trustedKeys: [], signingKeys: [] };

export type SupplyChainConfig = z.infer<typeof SupplyChainConfigSchema>;
export type TrustAnchor = SupplyChainConfig['trustedKeys'][number];
export type TrustAnchorKind = 'trustedKeys' | 'signingKeys';

/** App failure reasons: the flow names a key that is not configured, or not for its namespace; a legacy Secret reference. */
export type TrustAnchorRefusalReason = 'KeyNotConfigured' | 'KeyNotAllowed' | 'KeyInTenantNamespace';

export type TrustAnchorDecision =
  | { ok: true; namespace: string; anchor: TrustAnchor }
  | { ok: false; reason: TrustAnchorRefusalReason; message: string };

const WHAT: Record<TrustAnchorKind, string> = { trustedKeys: 'trusted key', signingKeys: 'signing key' };
export const MIGRATION_DOC = 'docs/supply-chain.md, "Migrating from keys in the flow\'s namespace"';

/**
 * Pure: which configured key a flow in `namespace` gets for what it wrote at `field` (`ref`: the
 * name, or a legacy Secret reference of its own namespace). `flow` is `<namespace>/<name>`, for
 * messages, which name the flow field, the key and what the platform admin must configure.
 */
export function resolveTrustAnchor(
  config: SupplyChainConfig | undefined,
  kind: TrustAnchorKind,
  namespace: string,
  flow: string,
  field: string,
  ref: { name?: string; secretRef?: { name: string } },
): TrustAnchorDecision {
  const where = `PromotionFlow ${flow} ${field}`;
  const what = WHAT[kind];
  if (ref.secretRef || !ref.name)
    return {
      ok: false,
      reason: 'KeyInTenantNamespace',
      message: ref.secretRef
        ? `${where}: names Secret ${namespace}/${ref.secretRef.name} of the flow's own namespace, which kpromo no longer trusts (whoever can write Secrets there could swap the key, whoever can read them could sign); a platform admin moves the key to the controller's namespace and configures it in the controller config supplyChain.${kind}, then the flow names it (${MIGRATION_DOC}); nothing was copied`
        : `${where}: names no ${what}; name one the platform configured in the controller config supplyChain.${kind}`,
    };
  const anchor = config?.[kind].find((a) => a.name === ref.name);
  if (!anchor || !config?.namespace)
    return {
      ok: false,
      reason: 'KeyNotConfigured',
      message: `${where}: ${what} "${ref.name}" is not configured; a platform admin must add it to the controller config supplyChain.${kind} (name ${ref.name}, a Secret in the controller's namespace, namespaces matching "${namespace}")`,
    };
  if (!anchor.namespaces.some((g) => globMatch(g, namespace)))
    return {
      ok: false,
      reason: 'KeyNotAllowed',
      message: `${where}: ${what} "${ref.name}" may not be used from namespace ${namespace}; a platform admin must allow it: the controller config supplyChain.${kind} (name ${ref.name}) namespaces must match "${namespace}"`,
    };
  return { ok: true, namespace: config.namespace, anchor };
}
