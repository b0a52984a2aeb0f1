import { describe, expect, it } from 'vitest';
import {
  blockedCategory,
  checkAddress,
  cidrProblem,
  egressPolicy,
  egressTarget,
  parseCidr,
} from '../../src/net/egressPolicy.js';
import { redactUrl } from '../../src/net/redactUrl.js';

const strict = egressPolicy({});
const verdict = (address: string, port = 443, policy = strict) => checkAddress(policy, address, port, 'hooks.test');

describe('default egress policy', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.3.4.5', 'loopback'],
    ['::1', 'loopback'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['169.254.169.254', 'a cloud metadata address'],
    ['fd00:ec2::254', 'a cloud metadata address'],
    ['100.100.100.200', 'a cloud metadata address'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'unique local (private)'],
    ['fdff:1::1', 'unique local (private)'],
    ['100.64.0.1', 'shared address space (CGNAT)'],
    ['100.127.255.255', 'shared address space (CGNAT)'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
  ])('blocks %s as %s', (address, category) => {
    expect(blockedCategory(address)).toBe(category);
    const v = verdict(address);
    expect(v).toEqual({
      allowed: false,
      category,
      reason: `address ${address} of host hooks.test is ${category}; ${
        category === 'a cloud metadata address'
          ? 'it is never reachable, whatever egress.allowedCidrs lists'
          : 'allow it with egress.allowedCidrs'
      }`,
    });
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback (IPv4-mapped 127.0.0.1)'],
    ['::ffff:7f00:1', 'loopback (IPv4-mapped 127.0.0.1)'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'a cloud metadata address (IPv4-mapped 169.254.169.254)'],
    ['::ffff:10.1.2.3', 'private (IPv4-mapped 10.1.2.3)'],
    ['::ffff:0:192.168.0.1', 'private (IPv4-translated 192.168.0.1)'],
    ['64:ff9b::7f00:1', 'loopback (NAT64 127.0.0.1)'],
    ['2002:a9fe:a9fe::1', 'a cloud metadata address (6to4 169.254.169.254)'],
    ['::7f00:1', 'loopback (IPv4-compatible 127.0.0.1)'],
  ])('blocks the IPv4-in-IPv6 form %s', (address, category) => {
    expect(blockedCategory(address)).toBe(category);
    expect(verdict(address).allowed).toBe(false);
  });

  it.each(['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8', '172.32.0.1', '100.128.0.1', '11.0.0.1'])(
    'allows the public address %s',
    (address) => {
      expect(blockedCategory(address)).toBeUndefined();
      expect(verdict(address)).toEqual({ allowed: true });
    },
  );

  it('does not name the host twice for IP literals', () => {
    expect(checkAddress(strict, '127.0.0.1', 80, '127.0.0.1')).toMatchObject({
      reason: 'address 127.0.0.1 is loopback; allow it with egress.allowedCidrs',
    });
    expect(checkAddress(strict, '::1', 80, '[::1]')).toMatchObject({
      reason: 'address ::1 is loopback; allow it with egress.allowedCidrs',
    });
  });
});

describe('egress.allowedCidrs', () => {
  const policy = egressPolicy({ allowedCidrs: ['127.0.0.1/32', '10.20.0.0/16', 'fd00:1::/32', '169.254.169.1'] });

  it('lets exactly the listed ranges through', () => {
    expect(verdict('127.0.0.1', 80, policy).allowed).toBe(true);
    expect(verdict('127.0.0.2', 80, policy).allowed).toBe(false);
    expect(verdict('10.20.255.1', 80, policy).allowed).toBe(true);
    expect(verdict('10.21.0.1', 80, policy).allowed).toBe(false);
    expect(verdict('fd00:1:ffff::1', 80, policy).allowed).toBe(true);
    expect(verdict('fd00:2::1', 80, policy).allowed).toBe(false);
    expect(verdict('169.254.169.1', 80, policy).allowed).toBe(true); // a bare address is a /32
    expect(verdict('169.254.169.2', 80, policy).allowed).toBe(false);
  });

  it('matches IPv4-mapped forms against IPv4 ranges and the other way round', () => {
    expect(verdict('::ffff:127.0.0.1', 80, policy).allowed).toBe(true);
    expect(verdict('::ffff:10.20.0.9', 80, policy).allowed).toBe(true);
    expect(verdict('::ffff:10.21.0.9', 80, policy).allowed).toBe(false);
    const mapped = egressPolicy({ allowedCidrs: ['::ffff:192.168.0.0/112'] });
    expect(parseCidr('::ffff:192.168.0.0/112').range[0].kind()).toBe('ipv4');
    expect(verdict('192.168.3.4', 80, mapped).allowed).toBe(true);
    expect(verdict('192.169.3.4', 80, mapped).allowed).toBe(true); // public anyway
    expect(verdict('10.0.0.1', 80, mapped).allowed).toBe(false);
  });

  it.each([
    ['10.0.0.0/33', 'prefix length must be 0..32'],
    ['fd00::/129', 'prefix length must be 0..128'],
    ['10/8', 'is not an IPv4 (four-part decimal) or IPv6 address'],
    ['10.0.0.0/8/8', 'is not a CIDR'],
    ['example.com/24', 'is not an IPv4'],
    ['', 'is not a CIDR'],
    ['10.0.0.0/x', 'prefix length'],
  ])('rejects %j with a message naming it', (entry, problem) => {
    const p = cidrProblem(entry);
    expect(p).toContain(`"${entry}"`);
    expect(p).toContain(problem);
    expect(() => egressPolicy({ allowedCidrs: ['127.0.0.1/32', entry] })).toThrow(problem);
  });

  it.each(['10.0.0.0/8', '0.0.0.0/0', '::/0', 'fe80::/10', '127.0.0.1', '::1'])('accepts %s', (entry) => {
    expect(cidrProblem(entry)).toBeUndefined();
  });
});

describe('cloud metadata addresses under a wide allowed range', () => {
  // An operator opens link-local (a node-local DNS cache) or everything (an egress proxy does the
  // filtering): the instance credentials behind the metadata address must stay out of reach.
  const wide = egressPolicy({
    allowedCidrs: ['169.254.0.0/16', '100.64.0.0/10', '0.0.0.0/0', '::/0', 'fd00::/8', '64:ff9b::/96', '2002::/16'],
  });

  it.each([
    ['169.254.169.254', 'a cloud metadata address'],
    ['100.100.100.200', 'a cloud metadata address'],
    ['fd00:ec2::254', 'a cloud metadata address'],
    ['::ffff:169.254.169.254', 'a cloud metadata address (IPv4-mapped 169.254.169.254)'],
    ['::ffff:0:a9fe:a9fe', 'a cloud metadata address (IPv4-translated 169.254.169.254)'],
    ['64:ff9b::a9fe:a9fe', 'a cloud metadata address (NAT64 169.254.169.254)'],
    ['2002:a9fe:a9fe::1', 'a cloud metadata address (6to4 169.254.169.254)'],
    ['::a9fe:a9fe', 'a cloud metadata address (IPv4-compatible 169.254.169.254)'],
    ['64:ff9b::6464:64c8', 'a cloud metadata address (NAT64 100.100.100.200)'],
  ])('refuses %s even though an allowed range covers it', (address, category) => {
    expect(checkAddress(wide, address, 80, 'hooks.test')).toEqual({
      allowed: false,
      category,
      reason: `address ${address} of host hooks.test is ${category}; it is never reachable, whatever egress.allowedCidrs lists`,
    });
  });

  it('lets the rest of the wide ranges through', () => {
    for (const a of [
      '169.254.169.253',
      '169.254.1.1',
      '100.100.100.201',
      'fd00:ec2::253',
      '10.0.0.1',
      '::ffff:10.0.0.1',
    ])
      expect(checkAddress(wide, a, 80).allowed, a).toBe(true);
  });

  it.each(['169.254.169.254', '169.254.169.254/32', '100.100.100.200', 'fd00:ec2::254/128', '::ffff:169.254.169.254'])(
    'refuses the allow-list entry %s, which names nothing but a metadata address',
    (entry) => {
      expect(cidrProblem(entry)).toBe(
        `"${entry}" names only a cloud metadata address, which is never reachable (the instance's credentials live there); remove it`,
      );
    },
  );
});

describe("the controller's own listeners", () => {
  const api = { name: 'API', address: '127.0.0.1', port: 8080 };
  const mcp = { name: 'MCP', address: '0.0.0.0', port: 8090 };
  const policy = egressPolicy({
    allowedCidrs: ['0.0.0.0/0', '::/0'],
    ownListeners: [api, mcp],
    localAddresses: ['10.1.2.3', 'fe80::1'],
  });

  it('are refused even when every range is allowed', () => {
    expect(checkAddress(policy, '127.0.0.1', 8080, 'kpromo.local')).toEqual({
      allowed: false,
      category: 'own listener',
      reason:
        "address 127.0.0.1 port 8080 of host kpromo.local is the controller's own API listener; it cannot be allowed",
    });
    expect(checkAddress(policy, '127.0.0.7', 8080).allowed).toBe(false); // all of 127/8 reaches it
    expect(checkAddress(policy, '::ffff:127.0.0.1', 8080).allowed).toBe(false);
    expect(checkAddress(policy, '0.0.0.0', 8080).allowed).toBe(false);
    expect(checkAddress(policy, '127.0.0.1', 8081).allowed).toBe(true); // another port
    expect(checkAddress(policy, '10.1.2.3', 8080).allowed).toBe(true); // API bound to loopback only
  });

  it('bound to an unspecified address cover loopback and every local interface address', () => {
    for (const a of ['127.0.0.1', '::1', '10.1.2.3', '::ffff:10.1.2.3', 'fe80::1', '0.0.0.0']) {
      expect(checkAddress(policy, a, 8090)).toMatchObject({ allowed: false, category: 'own listener' });
    }
    expect(checkAddress(policy, '10.1.2.4', 8090).allowed).toBe(true);
    expect(checkAddress(policy, '10.1.2.3', 8091).allowed).toBe(true);
  });
});

describe('egressTarget', () => {
  it('takes http and https only, without credentials', () => {
    expect(() => egressTarget('ftp://x/')).toThrow('scheme ftp: is not allowed (only http and https)');
    expect(() => egressTarget('file:///etc/passwd')).toThrow('scheme file:');
    expect(() => egressTarget('http://u:p@x/')).toThrow('credentials');
    expect(() => egressTarget('not a url')).toThrow('not a valid URL');
  });
  it('normalizes hosts the way the connection will see them', () => {
    expect(egressTarget('http://0x7f.1:81/')).toMatchObject({ hostname: '127.0.0.1', port: 81, literal: true });
    expect(egressTarget('http://2130706433/')).toMatchObject({ hostname: '127.0.0.1', port: 80, literal: true });
    expect(egressTarget('https://[::ffff:127.0.0.1]/')).toMatchObject({
      hostname: '::ffff:7f00:1',
      port: 443,
      literal: true,
    });
    expect(egressTarget('https://hooks.example.com/x')).toMatchObject({
      hostname: 'hooks.example.com',
      literal: false,
    });
  });
});

describe('redactUrl', () => {
  it('drops userinfo, query and fragment', () => {
    expect(redactUrl('https://user:pw@hooks.example.com:8443/a/b?token=s3cr3t#frag')).toBe(
      'https://hooks.example.com:8443/a/b',
    );
  });
  it('can drop the path too (incoming-webhook URLs carry their secret there)', () => {
    expect(redactUrl('https://hooks.slack.com/services/T0/B0/XYZ?x=1', { path: false })).toBe(
      'https://hooks.slack.com/…',
    );
    expect(redactUrl('https://hooks.example.com/', { path: false })).toBe('https://hooks.example.com/');
  });
  it('never echoes an unparsable input', () => {
    expect(redactUrl('::: token=abc')).toBe('<invalid url>');
  });
});
