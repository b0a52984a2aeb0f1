import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Environment } from '@kpromo/api';
import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.js';
import { type ClusterAccessRule, ClusterAccessSchema, clusterAccessRefusal, globMatch } from './clusterAccess.js';
import { ClusterClients, ClusterNotAllowedError, unsafeKubeconfigFields } from './clusters.js';

const env = (namespace: string, cluster: Environment['spec']['cluster']): Environment =>
  ({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'Environment',
    metadata: { name: 'e', namespace },
    spec: { cluster, namespace: 'apps', registry: { host: 'r.io' }, delivery: { method: 'patch' } },
  }) as Environment;

const rules: ClusterAccessRule[] = ClusterAccessSchema.parse([
  { namespaces: ['team-*'], contexts: ['staging', 'dev-?'], targetNamespaces: ['apps'] },
  {
    namespaces: ['platform'],
    contexts: ['*'],
    kubeconfigSecrets: ['prod-kubeconfig'],
    inCluster: true,
    targetNamespaces: ['apps'],
  },
]);

describe('clusterAccess', () => {
  it('allows only what an entry for the namespace lists', () => {
    expect(clusterAccessRefusal(rules, env('team-a', { context: 'staging' }))).toBeUndefined();
    expect(clusterAccessRefusal(rules, env('team-a', { context: 'dev-1' }))).toBeUndefined();
    expect(clusterAccessRefusal(rules, env('platform', { context: 'prod' }))).toBeUndefined();
    expect(clusterAccessRefusal(rules, env('platform', { inCluster: true }))).toBeUndefined();
    expect(
      clusterAccessRefusal(rules, env('platform', { kubeconfigSecretRef: { name: 'prod-kubeconfig' } })),
    ).toBeUndefined();

    expect(clusterAccessRefusal(rules, env('team-a', { context: 'prod' }))).toBe(
      'Environment team-a/e may not use kubeconfig context "prod": the controller config key clusterAccess has no entry allowing namespace team-a to; add "prod" to clusterAccess[].contexts of an entry whose namespaces match "team-a"',
    );
    expect(clusterAccessRefusal(rules, env('team-a', { context: 'dev-10' }))).toMatch(/may not use/);
    expect(clusterAccessRefusal(rules, env('team-a', { inCluster: true }))).toMatch(
      /clusterAccess\[\]\.inCluster: true/,
    );
    expect(clusterAccessRefusal(rules, env('team-a', { kubeconfigSecretRef: { name: 'prod-kubeconfig' } }))).toMatch(
      /kubeconfig Secret "prod-kubeconfig".*clusterAccess\[\]\.kubeconfigSecrets/,
    );
    expect(clusterAccessRefusal(rules, env('other', { context: 'staging' }))).toMatch(/namespace other/);
  });

  it('tenancy: an Environment delivers only into target namespaces of an entry that also allows its cluster', () => {
    const withTarget = (namespace: string, target: string, cluster: Environment['spec']['cluster']) => {
      const e = env(namespace, cluster);
      return { ...e, spec: { ...e.spec, namespace: target } } as Environment;
    };
    // No targetNamespaces: only the namespace named like the Environment's own.
    const own = ClusterAccessSchema.parse([{ namespaces: ['team-a'], contexts: ['prod'] }]);
    expect(clusterAccessRefusal(own, withTarget('team-a', 'team-a', { context: 'prod' }))).toBeUndefined();
    expect(clusterAccessRefusal(own, withTarget('team-a', 'team-b', { context: 'prod' }))).toBe(
      'Environment team-a/e may not deliver into namespace "team-b" of kubeconfig context "prod": no clusterAccess entry for namespace team-a that allows that cluster lists "team-b" in targetNamespaces (without targetNamespaces only "team-a" is allowed); add "team-b" to clusterAccess[].targetNamespaces of an entry whose namespaces match "team-a" and that allows kubeconfig context "prod"',
    );
    // ['*']: any namespace of the allowed cluster.
    const any = ClusterAccessSchema.parse([{ namespaces: ['team-a'], contexts: ['prod'], targetNamespaces: ['*'] }]);
    expect(clusterAccessRefusal(any, withTarget('team-a', 'kube-system', { context: 'prod' }))).toBeUndefined();
    // Globs.
    const globbed = ClusterAccessSchema.parse([
      { namespaces: ['team-a'], contexts: ['prod'], targetNamespaces: ['team-a-*'] },
    ]);
    expect(clusterAccessRefusal(globbed, withTarget('team-a', 'team-a-web', { context: 'prod' }))).toBeUndefined();
    expect(clusterAccessRefusal(globbed, withTarget('team-a', 'team-b-web', { context: 'prod' }))).toMatch(
      /may not deliver into namespace "team-b-web"/,
    );
    // A cluster from one entry and a namespace from another do not combine.
    const split = ClusterAccessSchema.parse([
      { namespaces: ['team-a'], contexts: ['prod'], targetNamespaces: ['team-a'] },
      { namespaces: ['team-a'], contexts: ['dev'], targetNamespaces: ['payments'] },
    ]);
    expect(clusterAccessRefusal(split, withTarget('team-a', 'payments', { context: 'dev' }))).toBeUndefined();
    expect(clusterAccessRefusal(split, withTarget('team-a', 'payments', { context: 'prod' }))).toMatch(
      /may not deliver into namespace "payments" of kubeconfig context "prod".*add "payments" to clusterAccess\[\]\.targetNamespaces of an entry whose namespaces match "team-a" and that allows kubeconfig context "prod"$/,
    );
    // The same for kubeconfig Secrets and the in-cluster account: the fix names the cluster.
    const secretAndInCluster = ClusterAccessSchema.parse([
      { namespaces: ['team-a'], kubeconfigSecrets: ['kc-*'], inCluster: true },
    ]);
    expect(
      clusterAccessRefusal(
        secretAndInCluster,
        withTarget('team-a', 'team-a', { kubeconfigSecretRef: { name: 'kc-1' } }),
      ),
    ).toBeUndefined();
    expect(
      clusterAccessRefusal(
        secretAndInCluster,
        withTarget('team-a', 'team-b', { kubeconfigSecretRef: { name: 'kc-1' } }),
      ),
    ).toMatch(/targetNamespaces of an entry whose namespaces match "team-a" and that allows kubeconfig Secret "kc-1"$/);
    expect(clusterAccessRefusal(secretAndInCluster, withTarget('team-a', 'team-b', { inCluster: true }))).toMatch(
      /may not deliver into namespace "team-b" of the controller's in-cluster service account/,
    );
    // The cluster refusal comes first when the cluster itself is not allowed.
    expect(clusterAccessRefusal(split, withTarget('team-a', 'payments', { context: 'stable' }))).toMatch(
      /may not use kubeconfig context "stable"/,
    );
  });

  it('denies everything when the config key is absent', () => {
    const cfg = loadConfig({ env: {} });
    expect(cfg.clusterAccess).toEqual([]);
    expect(clusterAccessRefusal(cfg.clusterAccess, env('default', { context: 'dev' }))).toMatch(/may not use/);
    expect(clusterAccessRefusal(cfg.clusterAccess, env('default', { inCluster: true }))).toMatch(/may not use/);
  });

  it('validates the config key', () => {
    const c = loadConfig({ env: {}, flags: { clusterAccess: [{ namespaces: ['a'], contexts: ['x'] }] } });
    expect(c.clusterAccess).toEqual([
      { namespaces: ['a'], contexts: ['x'], kubeconfigSecrets: [], inCluster: false, targetNamespaces: [] },
    ]);
    expect(() => loadConfig({ env: {}, flags: { clusterAccess: [{ contexts: ['x'] }] } })).toThrow(ConfigError);
    expect(() => loadConfig({ env: {}, flags: { clusterAccess: [{ namespaces: ['a'], context: ['x'] }] } })).toThrow(
      /clusterAccess\.0/,
    );
  });

  it('globs: * any run, ? one character, nothing else special', () => {
    expect(globMatch('team-*', 'team-a')).toBe(true);
    expect(globMatch('team-*', 'teamx')).toBe(false);
    expect(globMatch('a.b', 'axb')).toBe(false);
    expect(globMatch('dev-?', 'dev-12')).toBe(false);
  });
});

describe('ClusterClients refuses before any request', () => {
  it('a refused context, Secret or inCluster never reaches a cluster nor reads the Secret', async () => {
    const hits: string[] = [];
    const srv = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","code":404}');
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const server = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [
        { name: 'control', cluster: 'c', user: 'u' },
        { name: 'prod', cluster: 'c', user: 'u' },
      ],
      currentContext: 'control',
    });
    try {
      const clients = new ClusterClients(kc, {
        access: [
          {
            namespaces: ['platform'],
            contexts: ['prod'],
            kubeconfigSecrets: [],
            inCluster: false,
            targetNamespaces: ['*'],
          },
        ],
      });
      // Allowed for platform: the client is made (and cached under context:prod).
      await expect(clients.forEnvironment(env('platform', { context: 'prod' }))).resolves.toBeDefined();
      for (const cluster of [{ context: 'prod' }, { kubeconfigSecretRef: { name: 'kc' } }, { inCluster: true }]) {
        await expect(clients.forEnvironment(env('team-a', cluster))).rejects.toBeInstanceOf(ClusterNotAllowedError);
      }
      expect(hits).toEqual([]); // not even the Secret was read from the control cluster
    } finally {
      srv.close();
    }
  });

  it('an Environment allowed into its own namespace and then pointed at another one is refused (not a cached allow)', async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:9', skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'prod', cluster: 'c', user: 'u' }],
      currentContext: 'prod',
    });
    const clients = new ClusterClients(kc, {
      access: ClusterAccessSchema.parse([{ namespaces: ['team-a'], contexts: ['prod'] }]),
    });
    const own = env('team-a', { context: 'prod' });
    own.spec.namespace = 'team-a';
    expect(clients.refusal(own)).toBeUndefined();
    await expect(clients.forEnvironment(own)).resolves.toBeDefined();
    const retargeted = { ...own, spec: { ...own.spec, namespace: 'team-b' } } as Environment;
    expect(clients.refusal(retargeted)).toMatch(/may not deliver into namespace "team-b".*targetNamespaces/);
    await expect(clients.forEnvironment(retargeted)).rejects.toBeInstanceOf(ClusterNotAllowedError);
  });

  it('kubeconfigs from Secrets may not run commands or read local files', () => {
    const yaml = [
      'clusters: [{ name: c, cluster: { server: "https://x", certificate-authority: /etc/ca.pem } }]',
      'users:',
      '  - { name: a, user: { exec: { command: sh, args: [-c, id] } } }',
      '  - { name: b, user: { token-file: /var/run/secrets/kubernetes.io/serviceaccount/token } }',
      '  - { name: c, user: { auth-provider: { name: oidc } } }',
      '  - { name: d, user: { client-certificate-data: AAAA, client-key-data: BBBB } }',
    ].join('\n');
    expect(unsafeKubeconfigFields(yaml)).toEqual([
      'users[a].exec',
      'users[b].token-file',
      'users[c].auth-provider',
      'clusters[c].certificate-authority',
    ]);
  });
});
