import { JwtAuthenticator } from '../auth/oidc.js';
import type { CheckResult, DoctorCheck, DoctorContext } from './check.js';

const CHECK = 'mcp';

/** Pure: what the MCP settings alone say (no network): endpoint, write mode, RFC 9728 metadata. */
export function judgeMcpSettings(cfg: NonNullable<DoctorContext['mcp']>): CheckResult[] {
  const m = cfg.config;
  const subject = 'MCP endpoint';
  if (!m.enabled) return [{ check: CHECK, status: 'pass', subject, message: 'off (mcp.enabled is false)' }];
  const out: CheckResult[] = [
    {
      check: CHECK,
      status: 'pass',
      subject,
      message: `${m.host}:${m.port}${m.path}, ${m.write ? 'write mode: agents may create and approve plans, each as its authenticated caller under RBAC' : 'read-only (mcp.write is false)'}`,
    },
  ];
  if (m.oauth.resource) {
    const path = new URL(m.oauth.resource).pathname.replace(/\/$/, '') || '/';
    if (path !== m.path)
      out.push({
        check: CHECK,
        status: 'fail',
        subject: 'MCP OAuth resource',
        message: `mcp.oauth.resource ${m.oauth.resource} names path ${path}, not the endpoint's ${m.path}: agents would ask for tokens for another resource (RFC 8707), and strict ones refuse the metadata`,
        fix: `set mcp.oauth.resource to the endpoint's public URL ending in ${m.path}`,
      });
  }
  if (!m.oauth.authorizationServers.length)
    out.push({
      check: CHECK,
      status: 'warn',
      subject: 'MCP OAuth',
      message:
        'no authorization server is published (RFC 9728): agents that discover authorization find none and need a token handed to them',
      fix: 'configure auth.jwt with your identity provider (its issuer is then published), or give agents a ServiceAccount token with audience kpromo',
    });
  return out;
}

/**
 * The MCP endpoint's settings, and each trusted JWT issuer (auth.jwt, which the MCP metadata
 * publishes as authorization servers) answering its discovery document and JWKS from here, fetched
 * the way the controller verifies a token. Needs the controller config (`--config`).
 */
export const mcpCheck: DoctorCheck = {
  id: CHECK,
  title: 'MCP endpoint and OAuth issuers',
  async run(ctx) {
    if (!ctx.mcp)
      return [
        {
          check: CHECK,
          status: 'warn',
          subject: 'MCP endpoint',
          message: 'not checked: the controller config is needed',
          fix: 'kpromo doctor --config <the controller config file>',
        },
      ];
    const out = judgeMcpSettings(ctx.mcp);
    if (!ctx.mcp.jwt.length) return out;
    const probes = await new JwtAuthenticator(ctx.mcp.jwt, { egress: ctx.egress }).probe();
    for (const p of probes)
      out.push(
        p.error === undefined
          ? {
              check: CHECK,
              status: 'pass',
              subject: `issuer ${p.issuer}`,
              message: `discovery and JWKS answer (${p.keys} key(s))`,
            }
          : {
              check: CHECK,
              status: 'fail',
              subject: `issuer ${p.issuer}`,
              message: p.error,
              fix: 'check auth.jwt issuer.url, discoveryURL and certificateAuthority, and that the controller may reach them (egress.allowedCidrs); tokens of this issuer are refused until it answers',
            },
      );
    return out;
  },
};
