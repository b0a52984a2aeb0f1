import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { ClusterClients } from '../src/kube/clusters.js';
import { type ControlClusterChoice, chooseControlCluster, runningInPod } from '../src/kube/controlCluster.js';

// The mounted kubeconfig of the Helm chart (config.kubeconfig.existingSecret).
const MOUNTED = '/etc/kpromo-kubeconfig/kubeconfig';

describe('chooseControlCluster: how the controller reaches its control cluster', () => {
  const rows: Array<
    [
      string,
      { kubeconfig?: string; context?: string; controlInCluster: boolean; inPod: boolean },
      ControlClusterChoice['kind'],
      string?,
    ]
  > = [
    ['in a pod, nothing given: its ServiceAccount', { controlInCluster: false, inPod: true }, 'inCluster'],
    ['in a pod, inCluster said: its ServiceAccount', { controlInCluster: true, inPod: true }, 'inCluster'],
    [
      'in a pod, a kubeconfig with inCluster: its ServiceAccount, the kubeconfig for Environments',
      { kubeconfig: MOUNTED, controlInCluster: true, inPod: true },
      'inCluster',
    ],
    [
      'in a pod, a kubeconfig without inCluster: refused (its current context would be the control cluster)',
      { kubeconfig: MOUNTED, controlInCluster: false, inPod: true },
      'refuse',
      'set controlCluster.inCluster: true',
    ],
    [
      'in a pod, a control context: refused',
      { kubeconfig: MOUNTED, context: 'prod', controlInCluster: true, inPod: true },
      'refuse',
      'unset context',
    ],
    [
      'in a pod, a context alone: refused',
      { context: 'prod', controlInCluster: false, inPod: true },
      'refuse',
      'unset context',
    ],
    [
      'local development, a kubeconfig and context: that context',
      { kubeconfig: '/k', context: 'dev', controlInCluster: false, inPod: false },
      'kubeconfig',
    ],
    ['local development, nothing: the default kubeconfig', { controlInCluster: false, inPod: false }, 'kubeconfig'],
    [
      'local development, inCluster said: refused (there is no ServiceAccount)',
      { kubeconfig: '/k', controlInCluster: true, inPod: false },
      'refuse',
      'outside a pod',
    ],
  ];
  it.each(rows)('%s', (_t, input, kind, says) => {
    const c = chooseControlCluster(input);
    expect(c.kind).toBe(kind);
    if (says) expect(c.kind === 'refuse' && c.problem).toContain(says);
  });

  it('keeps the kubeconfig for Environment contexts only when in a pod', () => {
    expect(chooseControlCluster({ kubeconfig: MOUNTED, controlInCluster: true, inPod: true })).toEqual({
      kind: 'inCluster',
      environmentKubeconfig: MOUNTED,
    });
    expect(chooseControlCluster({ kubeconfig: '/k', context: 'dev', controlInCluster: false, inPod: false })).toEqual({
      kind: 'kubeconfig',
      path: '/k',
      context: 'dev',
    });
  });

  it('runningInPod needs the apiserver address and a ServiceAccount token', () => {
    const env = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
    expect(runningInPod(env, true)).toBe(true);
    expect(runningInPod(env, false)).toBe(false);
    expect(runningInPod({}, true)).toBe(false);
  });
});

describe('ClusterClients.fromConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-control-'));
  const file = join(dir, 'kubeconfig');
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
  - { name: other, cluster: { server: 'https://other.example:6443' } }
users:
  - { name: admin, user: { token: not-a-real-token } }
contexts:
  - { name: other-admin, context: { cluster: other, user: admin } }
current-context: other-admin
`,
  );

  it("attack: the chart's mounted kubeconfig becoming the control cluster (its current context's user as the controller) is refused at startup, saying what to set", () => {
    const cfg = loadConfig({ env: { KPROMO_KUBECONFIG: file } });
    expect(() => ClusterClients.fromConfig(cfg, true)).toThrow(ConfigError);
    expect(() => ClusterClients.fromConfig(cfg, true)).toThrow(
      /would make its current context the control cluster and its user the controller's identity there.*set controlCluster.inCluster: true/,
    );
  });

  it('in a pod with controlCluster.inCluster the control cluster is the in-cluster apiserver, not the kubeconfig context', () => {
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    process.env.KUBERNETES_SERVICE_HOST = '10.96.0.1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    try {
      const c = ClusterClients.fromConfig(
        loadConfig({ env: { KPROMO_KUBECONFIG: file, KPROMO_CONTROL_IN_CLUSTER: 'true' } }),
        true,
      );
      expect(c.control.kc.getCurrentCluster()?.server).toBe('https://10.96.0.1:443');
      expect(c.control.kc.getCurrentUser()?.name).not.toBe('admin');
    } finally {
      for (const [k, v] of [
        ['KUBERNETES_SERVICE_HOST', saved.host],
        ['KUBERNETES_SERVICE_PORT', saved.port],
      ] as const)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  });

  it('local development keeps working: outside a pod the kubeconfig context is the control cluster', () => {
    const c = ClusterClients.fromConfig(loadConfig({ env: { KPROMO_KUBECONFIG: file } }), false);
    expect(c.control.clusterName).toBe('other-admin');
  });

  it('KPROMO_CONTROL_IN_CLUSTER sets controlCluster.inCluster', () => {
    expect(loadConfig({ env: { KPROMO_CONTROL_IN_CLUSTER: 'true' } }).controlCluster).toEqual({ inCluster: true });
    expect(loadConfig({ env: {} }).controlCluster).toEqual({ inCluster: false });
  });
});
