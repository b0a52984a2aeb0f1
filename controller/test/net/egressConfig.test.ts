import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('egress config', () => {
  it('allows nothing extra by default', () => {
    expect(loadConfig({ env: {} }).egress).toEqual({ allowedCidrs: [] });
  });

  it('reads egress.allowedCidrs from the file and KPROMO_EGRESS_ALLOWED_CIDRS (comma list, env wins)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kpromo-egress-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'egress:\n  allowedCidrs: [10.0.0.0/8, "fd00::/8"]\n');
    expect(loadConfig({ env: {}, file }).egress.allowedCidrs).toEqual(['10.0.0.0/8', 'fd00::/8']);
    expect(
      loadConfig({ env: { KPROMO_EGRESS_ALLOWED_CIDRS: ' 127.0.0.1/32, 192.168.0.0/16 ,' }, file }).egress.allowedCidrs,
    ).toEqual(['127.0.0.1/32', '192.168.0.0/16']);
  });

  it('names the bad entry and where it came from', () => {
    expect(problems(() => loadConfig({ env: { KPROMO_EGRESS_ALLOWED_CIDRS: '10.0.0.0/8,10.0.0.0/33' } }))).toEqual([
      'egress.allowedCidrs (env KPROMO_EGRESS_ALLOWED_CIDRS): "10.0.0.0/33" is not a CIDR: prefix length must be 0..32',
    ]);
    const file = join(mkdtempSync(join(tmpdir(), 'kpromo-egress-')), 'config.yaml');
    writeFileSync(file, 'egress:\n  allowedCidrs: [localhost/8, "fd00::/8"]\n');
    expect(problems(() => loadConfig({ env: {}, file }))).toEqual([
      `egress.allowedCidrs (file ${file}): "localhost/8" is not a CIDR: localhost is not an IPv4 (four-part decimal) or IPv6 address`,
    ]);
    expect(problems(() => loadConfig({ env: {}, flags: { egress: { allowCidrs: [] } } }))[0]).toMatch(/allowCidrs/);
  });
});
