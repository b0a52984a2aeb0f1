import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

const file = (text: string) => {
  const p = join(mkdtempSync(join(tmpdir(), 'kpromo-cfg-')), 'config.yaml');
  writeFileSync(p, text);
  return p;
};
const problems = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
};

describe('loadConfig', () => {
  it('applies defaults and the precedence flags > env > file', () => {
    const c = loadConfig({
      file: file('workers: 2\nserver: { port: 9000 }\nleaderElection: { namespace: kpromo }\n'),
      env: { KPROMO_WORKERS: '3', KPROMO_NAMESPACES: 'a, b' },
      flags: { workers: 5 },
    });
    expect(c.workers).toBe(5);
    expect(c.server).toEqual({ host: '127.0.0.1', port: 9000 });
    expect(c.namespaces).toEqual(['a', 'b']);
    expect(c.leaderElection).toMatchObject({
      enabled: true,
      namespace: 'kpromo',
      name: 'kpromo-controller',
      leaseDurationSeconds: 15,
    });
    expect(c.leaderElection.identity).toBeTruthy();
  });

  it('reports every bad value with its path, its source and what was given', () => {
    const p = problems(() =>
      loadConfig({
        file: file('workers: 0\nlogLevel: loud\nserver: { port: 70000 }\n'),
        env: { KPROMO_LEADER_ELECT: 'maybe', KPROMO_NAMESPACES: 'Bad_NS' },
      }),
    );
    expect(p).toHaveLength(5);
    expect(p.find((x) => x.startsWith('workers'))).toMatch(/file .*config\.yaml.*got 0/);
    expect(p.find((x) => x.startsWith('logLevel'))).toMatch(/got "loud"/);
    expect(p.find((x) => x.startsWith('server.port'))).toMatch(/got 70000/);
    expect(p.find((x) => x.startsWith('leaderElection.enabled'))).toMatch(/env KPROMO_LEADER_ELECT/);
    expect(p.find((x) => x.startsWith('namespaces'))).toMatch(/must be a namespace name/);
  });

  it('refuses resourceKinds entries of Kubernetes built-in groups or kpromo kinds, naming the entry', () => {
    const p = problems(() =>
      loadConfig({
        env: { KPROMO_RESOURCE_KINDS: 'widgets.example.com,deployments.apps,jobs.batch' },
        file: file(
          'resourceKinds: [poddisruptionbudgets.policy, roles.rbac.authorization.k8s.io, linestops.promotions.kpromo.dev]\n',
        ),
      }),
    );
    expect(p).toEqual([
      'resourceKinds (env KPROMO_RESOURCE_KINDS): deployments.apps cannot be opened to resource actions: Kubernetes built-in kinds are never written with the controller identity; list only custom resources (<plural>.<group> of a CRD)',
      'resourceKinds (env KPROMO_RESOURCE_KINDS): jobs.batch cannot be opened to resource actions: Kubernetes built-in kinds are never written with the controller identity; list only custom resources (<plural>.<group> of a CRD)',
    ]);
    const fromFile = problems(() =>
      loadConfig({
        env: {},
        file: file(
          'resourceKinds: [poddisruptionbudgets.policy, roles.rbac.authorization.k8s.io, linestops.promotions.kpromo.dev, widgets.example.com]\n',
        ),
      }),
    );
    expect(fromFile).toHaveLength(3);
    expect(fromFile[0]).toMatch(/^resourceKinds \(file .*\): poddisruptionbudgets\.policy cannot be opened.*built-in/);
    expect(fromFile[1]).toMatch(/^resourceKinds .*roles\.rbac\.authorization\.k8s\.io cannot be opened.*built-in/);
    expect(fromFile[2]).toMatch(
      /^resourceKinds .*linestops\.promotions\.kpromo\.dev cannot be opened.*judged by admission/,
    );
    expect(loadConfig({ env: { KPROMO_RESOURCE_KINDS: 'widgets.example.com' } }).resourceKinds).toEqual([
      'widgets.example.com',
    ]);
  });

  it('rejects unknown keys, renew interval/deadline not shorter than the lease, bad YAML and missing files', () => {
    expect(problems(() => loadConfig({ env: {}, flags: { wrokers: 2 } }))[0]).toMatch(/wrokers/);
    expect(
      problems(() =>
        loadConfig({ env: {}, flags: { leaderElection: { leaseDurationSeconds: 2, renewIntervalMs: 5000 } } }),
      )[0],
    ).toMatch(/leaderElection.renewIntervalMs.*shorter than the renew deadline \(1333 ms/);
    expect(() =>
      loadConfig({ env: {}, flags: { leaderElection: { leaseDurationSeconds: 4, renewDeadlineMs: 4000 } } }),
    ).toThrow(/leaderElection.renewDeadlineMs.*shorter than leaseDurationSeconds \(4s\)/);
    expect(problems(() => loadConfig({ env: {}, file: file('workers: [1\n') }))[0]).toMatch(/not valid YAML/);
    expect(problems(() => loadConfig({ env: {}, file: '/nonexistent/kpromo.yaml' }))[0]).toMatch(
      /cannot read \(ENOENT\)/,
    );
  });

  it('a shard gets its own Lease and, by default, the namespaces labelled promotions.kpromo.dev/shard=<name>', () => {
    const c = loadConfig({ env: { KPROMO_SHARD: 'blue' } });
    expect(c.shard).toEqual({ name: 'blue', namespaceSelector: 'promotions.kpromo.dev/shard=blue' });
    expect(c.leaderElection.name).toBe('kpromo-controller-blue');
    const d = loadConfig({
      env: {},
      file: file(
        'shard: { name: default, namespaceSelector: "!promotions.kpromo.dev/shard" }\nleaderElection: { name: kp }\n',
      ),
    });
    expect(d.shard?.namespaceSelector).toBe('!promotions.kpromo.dev/shard');
    expect(d.leaderElection.name).toBe('kp-default');
    expect(loadConfig({ env: {} }).shard).toBeUndefined();
  });

  it('refuses a shard without a name, a bad shard name, and a shard together with a namespace list', () => {
    expect(problems(() => loadConfig({ env: {}, flags: { shard: { namespaceSelector: 'team=a' } } }))).toEqual([
      expect.stringMatching(/^shard.name .*needs a name/),
    ]);
    expect(problems(() => loadConfig({ env: { KPROMO_SHARD: 'Blue_1' } }))[0]).toMatch(
      /^shard.name \(env KPROMO_SHARD\): must be a DNS label.*got "Blue_1"/,
    );
    expect(problems(() => loadConfig({ env: { KPROMO_SHARD: 'a', KPROMO_NAMESPACES: 'x' } }))[0]).toMatch(
      /^namespaces .*exclusive/,
    );
  });
});
