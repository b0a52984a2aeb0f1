import { describe, expect, it } from 'vitest';
import { judgeMcpSettings } from '../../src/doctor/mcp.js';
import { McpConfigSchema } from '../../src/mcp/config.js';

const judge = (mcp: Record<string, unknown>) => judgeMcpSettings({ config: McpConfigSchema.parse(mcp), jwt: [] });

describe('doctor: MCP settings', () => {
  it('passes an endpoint that is off, and says read-only or write mode when on', () => {
    expect(judge({})).toEqual([
      { check: 'mcp', status: 'pass', subject: 'MCP endpoint', message: 'off (mcp.enabled is false)' },
    ]);
    const on = judge({ enabled: true, host: '0.0.0.0', oauth: { authorizationServers: ['https://idp.example.com'] } });
    expect(on).toEqual([
      {
        check: 'mcp',
        status: 'pass',
        subject: 'MCP endpoint',
        message: '0.0.0.0:8090/mcp, read-only (mcp.write is false)',
      },
    ]);
  });

  it('warns when no authorization server is published, and fails a resource URL of another path', () => {
    const r = judge({ enabled: true, oauth: { resource: 'https://kpromo.example.com/mcp/' } });
    // A trailing slash is the same endpoint.
    expect(r.map((x) => [x.subject, x.status])).toEqual([
      ['MCP endpoint', 'pass'],
      ['MCP OAuth', 'warn'],
    ]);
    const other = judge({
      enabled: true,
      path: '/agents/mcp',
      oauth: { resource: 'https://kpromo.example.com/mcp', authorizationServers: ['https://idp.example.com'] },
    });
    expect(other.find((x) => x.status === 'fail')).toMatchObject({
      subject: 'MCP OAuth resource',
      fix: "set mcp.oauth.resource to the endpoint's public URL ending in /agents/mcp",
    });
  });
});
