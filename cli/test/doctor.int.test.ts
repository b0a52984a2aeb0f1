// `kpromo doctor` on the local control plane, in-process (buildProgram) as main.ts runs it: a
// healthy installation on `dev` (CRDs and admission policies from examples/, a real controller
// holding its Lease, reachable clusters and registries), then each check in its failing state:
// the `prod` cluster where kpromo is not installed, an Environment whose namespace is missing, one
// clusterAccess refuses, a registry that refuses its credentials, and a Lease nobody holds.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type Running, startController } from '@kpromo/controller';
import { ADMISSION_POLICIES } from '@kpromo/controller/doctor';
import {
  ADMISSION_POLICY,
  applyCrds,
  applyManifest,
  createBareRepo,
  type GitHttpServer,
  installFluxApiCrds,
  kubeConfigFor,
  loadYaml,
  needComponents,
  startBasicAuthProxy,
  startGitHttpServer,
  waitFor,
} from '@kpromo/test-harness';
import {
  applyCr,
  applyHelmRelease,
  controllerConfig,
  deleteNs,
  ensureNs,
  pushTestImage,
  restFor,
  serviceAccountKubeconfig,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { EXIT } from '../src/exitCodes.js';
import { runKpromo } from './inProcess.js';

// The delivery check reads HelmReleases: their CRD is generated from Flux's API module.
await needComponents('flux-crds');

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `doctor-${RUN}`;
const APPS_NS = `doctor-apps-${RUN}`;
const LEASE = `kpromo-doctor-${RUN}`;
const DISCOVERY = `kpromo-doctor-discovery-${RUN}`;
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const prod = restFor(kubeconfig, 'prod');
const ADMISSION = '/apis/admissionregistration.k8s.io/v1';
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
/** kpromo's policies and bindings as another release on `prod` (where kpromo is not installed). */
const NARROW = `doctor-${RUN}`;
/** Its controller identity parameter, in namespace default of prod. */
const NARROW_IDENTITY = `/api/v1/namespaces/default/configmaps/${NARROW}-controller-identity`;
const removeNarrow = async () => {
  for (const d of loadYaml(ADMISSION_POLICY)) {
    if (d.kind === 'ConfigMap') continue;
    const kind =
      d.kind === 'ValidatingAdmissionPolicy' ? 'validatingadmissionpolicies' : 'validatingadmissionpolicybindings';
    const name = String(d.metadata?.name).replace(/^kpromo-/, `${NARROW}-`);
    await prod.delete(`${ADMISSION}/${kind}/${name}`).catch(() => undefined);
  }
  await prod.delete(NARROW_IDENTITY).catch(() => undefined);
};
const dir = mkdtempSync(join(tmpdir(), 'kpromo-doctor-'));
const WRONG = 'WRONG-pw-7f3a';
let ctl: Running | undefined;
let proxy: Awaited<ReturnType<typeof startBasicAuthProxy>> | undefined;
let git: GitHttpServer | undefined;
const gitHead = (bare: string) => execFileSync('git', ['-C', bare, 'rev-parse', 'main'], { encoding: 'utf8' }).trim();

/** `kpromo` in-process with the test kubeconfig. */
const kpromo = (args: string[]) => runKpromo(['--kubeconfig', kubeconfig, ...args]);

const env = (name: string, context: string, namespace: string, registry: Record<string, unknown>) => ({
  kind: 'Environment',
  metadata: { name, namespace: NS },
  spec: { cluster: { context }, namespace, registry, delivery: { method: 'patch' } },
});
const configFile = (lease: string, extra: Record<string, unknown> = {}) => {
  const file = join(dir, `${lease}.yaml`);
  writeFileSync(
    file,
    stringify({
      // As the controller's (controllerConfig): the harness registries listen on loopback.
      egress: { allowedCidrs: ['127.0.0.1/32'] },
      ...extra,
      clusterAccess: [
        {
          namespaces: [NS],
          contexts: ['dev', 'stable'],
          kubeconfigSecrets: [],
          inCluster: false,
          targetNamespaces: [APPS_NS, `missing-${RUN}`],
        },
      ],
      leaderElection: { namespace: NS, name: lease },
    }),
  );
  return file;
};

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, NS);
  for (const c of [dev, stable]) await ensureNs(c, APPS_NS);
  await pushTestImage({ host: source, repository: 'doctor/web', tag: 'v1', seed: `doctor-${RUN}` });
  await applyCr(dev, env('dev', 'dev', APPS_NS, { host: source, insecure: true }));
  await applyCr(dev, env('stable', 'stable', APPS_NS, { host: target, prefix: 'stable', insecure: true }));
  await applyCr(dev, {
    kind: 'Application',
    metadata: { name: 'web', namespace: NS },
    spec: { owner: 'team-a', image: { repository: 'doctor/web' }, workloads: [{ kind: 'Deployment', name: 'web' }] },
  });
  ctl = await startController(
    controllerConfig(kubeconfig, NS, {
      leaderElection: { enabled: true, namespace: NS, name: LEASE, leaseDurationSeconds: 15 },
      // As testClusterAccess, and one kubeconfig Secret: the "limited" Environment's cluster identity.
      clusterAccess: [
        {
          namespaces: [NS],
          contexts: ['*'],
          kubeconfigSecrets: ['limited-kubeconfig'],
          inCluster: false,
          targetNamespaces: ['*'],
        },
      ],
    }),
  );
  await waitFor(
    'lease held',
    async () => dev.getOrUndefined(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/${LEASE}`),
    30_000,
  );
  // The controller has reported on both Environments (what the controller check reads).
  await waitFor(
    'Environments Ready',
    async () => {
      const { items } = (await dev.get(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/environments`)) as {
        items: Array<{ status?: { conditions?: Array<{ type: string; status: string }> } }>;
      };
      return items.every((e) => e.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    },
    30_000,
  );
}, 180_000);

afterAll(async () => {
  await ctl?.stop().catch(() => undefined);
  await proxy?.stop();
  await git?.stop();
  await dev.delete(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${DISCOVERY}`).catch(() => undefined);
  await removeNarrow();
  await deleteNs(dev, NS);
  for (const c of [dev, stable]) await deleteNs(c, APPS_NS);
});

describe('kpromo doctor', () => {
  it('passes a healthy installation: CRDs, admission policies, environments, registries, leader', async () => {
    // Its namespaces as the controller's: RBAC and admission are judged where it reconciles.
    const r = await kpromo([
      'doctor',
      '-n',
      NS,
      '--context',
      'dev',
      '--config',
      configFile(LEASE, { namespaces: [NS] }),
    ]);
    expect(r.err).toBe('');
    expect(r.code).toBe(EXIT.OK);
    const lines = r.out.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('FAIL') || l.startsWith('WARN'))).toEqual([]);
    expect(lines.filter((l) => /^PASS {2}crds/.test(l))).toHaveLength(8);
    // Every policy, and the controller identity they trust (applyCrds: the harness admin among them).
    expect(lines.filter((l) => /^PASS {2}admission/.test(l))).toHaveLength(ADMISSION_POLICIES.length + 1);
    expect(r.out).toMatch(
      /PASS {2}admission {4}ConfigMap kpromo\/kpromo-controller-identity: the controller identity of kpromo-plan-approvals, kpromo-status-writers, kpromo-history-writers, kpromo-line-stops: .*kpromo-admin/,
    );
    expect(r.out).toContain(
      `PASS  environments Environment stable: cluster stable reachable, namespace ${APPS_NS} exists`,
    );
    expect(r.out).toContain(`PASS  registries   Environment dev registry ${source}: doctor/web readable`);
    expect(r.out).toContain(
      `PASS  registries   Environment stable registry ${target}: reachable (stable/doctor/web has no images yet)`,
    );
    expect(r.out).toMatch(new RegExp(`PASS {2}leader {7}Lease ${NS}/${LEASE}: held by \\S+, renewed \\d+s ago`));
    expect(r.out).toMatch(/PASS {2}clock {8}apiserver of dev: /);
    // The controller's own view of each Environment (its Ready condition).
    expect(r.out).toContain(
      `PASS  controller   Environment stable: the controller watches namespace ${APPS_NS} of cluster stable: watching Deployments, StatefulSets in namespace ${APPS_NS} of cluster context:stable; 0 application(s) observed`,
    );
    expect(r.out).toContain('PASS  mcp          MCP endpoint: off (mcp.enabled is false)');
    expect(r.out).toContain(
      `PASS  rbac         RBAC in namespace ${NS} and cluster-wide: no role grants approve, rollback, override-freeze, continue or govern through a wildcard`,
    );
    expect(lines.at(-1)).toBe(`${19 + ADMISSION_POLICIES.length} passed, 0 warning(s), 0 failed`);
    const json = await kpromo(['doctor', '-n', NS, '--context', 'dev', '--check', 'leader', '-o', 'json']);
    // Without --config the default Lease name is looked for, which this test's controller does not hold.
    expect(JSON.parse(json.out).results).toEqual([
      expect.objectContaining({ check: 'leader', status: 'fail', message: 'no controller holds it' }),
    ]);
    expect(json.code).toBe(EXIT.FAILURE);
  });

  it("judges registries by the controller config's egress rule: a loopback registry egress.allowedCidrs does not list fails, naming the key", async () => {
    const args = ['doctor', '-n', NS, '--context', 'dev', '--check', 'registries'];
    const r = await kpromo([...args, '--config', configFile(`egress-${RUN}`, { egress: { allowedCidrs: [] } })]);
    expect(r.code).toBe(EXIT.FAILURE);
    expect(r.out).toMatch(
      new RegExp(
        `FAIL {2}registries {3}Environment dev registry ${source.replace(/[.]/g, '\\.')}: .*blocked by egress policy`,
      ),
    );
    expect(r.out).toContain('egress.allowedCidrs of the controller config (chart: config.egress.allowedCidrs)');
    // Without the config there is no rule to apply: reached as you reach it.
    const open = await kpromo(args);
    expect(open.out).toContain(`PASS  registries   Environment dev registry ${source}: doctor/web readable`);
  });

  it('attack: a wildcard Role in a reconciled namespace gives a developer approve; the doctor warns, naming role, binding and subject', async () => {
    await dev.create(`${RBAC}/namespaces/${NS}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'plans-admin', namespace: NS },
      rules: [{ apiGroups: ['promotions.kpromo.dev'], resources: ['promotionplans'], verbs: ['*'] }],
    });
    await dev.create(`${RBAC}/namespaces/${NS}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'devs', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'plans-admin' },
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'dev@example.com' },
        { kind: 'ServiceAccount', name: 'kpromo-controller', namespace: NS },
      ],
    });
    try {
      // The apiserver agrees: the wildcard holds the custom verb (admission asks for approve).
      const review = await dev.create<{ status: { allowed: boolean } }>(
        '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: 'dev@example.com',
            resourceAttributes: {
              namespace: NS,
              group: 'promotions.kpromo.dev',
              resource: 'promotionplans',
              verb: 'approve',
            },
          },
        },
      );
      expect(review.status.allowed).toBe(true);
      const r = await kpromo([
        'doctor',
        '-n',
        NS,
        '--context',
        'dev',
        '--check',
        'rbac',
        '--controller-service-account',
        `${NS}/kpromo-controller`,
      ]);
      expect(r.out).toContain(
        `WARN  rbac         RoleBinding ${NS}/devs (Role ${NS}/plans-admin): User dev@example.com holds approve, rollback (approve rollbacks), override-freeze, continue in namespace ${NS} through verbs: ["*"]`,
      );
      // The controller's own ServiceAccount is left out.
      expect(r.out).not.toContain('ServiceAccount');
      // A warning, not a failure.
      expect(r.code).toBe(EXIT.OK);
    } finally {
      await dev.delete(`${RBAC}/namespaces/${NS}/rolebindings/devs`).catch(() => undefined);
      await dev.delete(`${RBAC}/namespaces/${NS}/roles/plans-admin`).catch(() => undefined);
    }
  });

  it('attack: admission bindings whose namespaceSelector leaves out a reconciled namespace fail, naming binding and namespace', async () => {
    // kpromo's policies as release "doctor-<run>" on prod, bound only in NS; their controller
    // identity in namespace default.
    for (const d of loadYaml(ADMISSION_POLICY)) {
      const name = String(d.metadata?.name).replace(/^kpromo-/, `${NARROW}-`);
      if (d.kind === 'ConfigMap') {
        await applyManifest(kubeConfigFor('prod', kubeconfig), {
          ...d,
          metadata: { ...d.metadata, name, namespace: 'default' },
        });
        continue;
      }
      const spec = d.spec as Record<string, unknown>;
      await applyManifest(kubeConfigFor('prod', kubeconfig), {
        ...d,
        metadata: { name },
        spec:
          d.kind === 'ValidatingAdmissionPolicyBinding'
            ? {
                ...spec,
                policyName: String(spec.policyName).replace(/^kpromo-/, `${NARROW}-`),
                ...((spec.paramRef as { name?: string } | undefined)?.name
                  ? {
                      paramRef: {
                        ...(spec.paramRef as object),
                        name: `${NARROW}-controller-identity`,
                        namespace: 'default',
                      },
                    }
                  : {}),
                matchResources: {
                  namespaceSelector: {
                    matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [NS] }],
                  },
                },
              }
            : spec,
      });
    }
    const doctor = (namespaces: string[]) =>
      kpromo([
        'doctor',
        '-n',
        NS,
        '--context',
        'prod',
        '--config',
        configFile(`narrow-${namespaces.length}`, { namespaces }),
        '--check',
        'admission',
      ]);
    try {
      const covered = await doctor([NS]);
      expect(covered.out).toContain(
        `PASS  admission    ValidatingAdmissionPolicy ${NARROW}-plan-approvals: bound (Deny) by ${NARROW}-plan-approvals`,
      );
      expect(covered.code).toBe(EXIT.OK);
      const r = await doctor([NS, APPS_NS]);
      expect(r.code).toBe(EXIT.FAILURE);
      expect(r.out).toContain(
        `FAIL  admission    ValidatingAdmissionPolicyBinding ${NARROW}-plan-approvals: its matchResources.namespaceSelector leaves out namespace ${APPS_NS}, which the controller reconciles: nothing enforces who may approve, and that approvals name themselves there`,
      );
      expect(r.out.split('\n').filter((l) => l.startsWith('FAIL'))).toHaveLength(ADMISSION_POLICIES.length);
      expect(r.out).toContain(
        "fix: select every reconciled namespace in the binding (the chart's admissionPolicy.namespaces",
      );
    } finally {
      // The next test needs prod without kpromo.
      await removeNarrow();
    }
  });

  it('fails where kpromo is not installed, naming the fix', async () => {
    const r = await kpromo(['doctor', '-n', NS, '--context', 'prod', '--check', 'crds', 'admission']);
    expect(r.code).toBe(EXIT.FAILURE);
    // Eight CRDs and every policy.
    expect(r.err).toBe(`${8 + ADMISSION_POLICIES.length} check(s) failed`);
    expect(r.out).toContain(
      'FAIL  crds         CustomResourceDefinition promotionplans.promotions.kpromo.dev: not installed',
    );
    expect(r.out).toContain('      fix: kubectl apply --server-side -f examples/crds/');
    expect(r.out).toContain(
      'FAIL  admission    ValidatingAdmissionPolicy *-plan-approvals: not installed: nothing enforces who may approve',
    );
    expect(r.out).toContain('      fix: kubectl apply -f examples/deploy/admission-policy.yaml');
  });

  it('fails an Environment whose namespace is missing or that clusterAccess refuses, and a registry refusing its credentials, without printing them', async () => {
    proxy = await startBasicAuthProxy({ target: source, users: { bob: 'bob-pw' } });
    await dev.create(`/api/v1/namespaces/${NS}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/dockerconfigjson',
      metadata: { name: 'wrongcreds', namespace: NS, labels: { 'promotions.kpromo.dev/credential': 'true' } },
      stringData: {
        '.dockerconfigjson': JSON.stringify({
          auths: { [`http://${proxy.host}`]: { username: 'bob', password: WRONG } },
        }),
      },
    });
    await applyCr(dev, env('gone', 'stable', `missing-${RUN}`, { host: target, insecure: true }));
    await applyCr(dev, env('other', 'prod', APPS_NS, { host: target, insecure: true }));
    await applyCr(dev, {
      ...env('locked', 'dev', APPS_NS, {
        host: proxy.host,
        insecure: true,
        credentialsSecretRef: { name: 'wrongcreds' },
      }),
    });
    const r = await kpromo([
      'doctor',
      '-n',
      NS,
      '--context',
      'dev',
      '--config',
      configFile(LEASE),
      '--check',
      'environments',
      'registries',
    ]);
    expect(r.code).toBe(EXIT.FAILURE);
    expect(r.out).toContain(`FAIL  environments Environment gone: namespace missing-${RUN} does not exist in stable`);
    expect(r.out).toMatch(/FAIL {2}environments Environment other: .*prod/);
    expect(r.out).toContain('fix: add a clusterAccess rule for it to the controller config');
    expect(r.out).toMatch(
      new RegExp(`FAIL {2}registries {3}Environment locked registry ${proxy.host.replace(/[.]/g, '\\.')}: `),
    );
    expect(r.out).toContain('fix: check the Secret named by spec.registry.credentialsSecretRef of Environment locked');
    expect(r.out + r.err).not.toContain(WRONG);
  });

  it("fails an Environment the controller itself cannot reach, from the controller's own Ready condition", async () => {
    await applyCr(dev, env('nowhere', `nowhere-${RUN}`, APPS_NS, { host: target, insecure: true }));
    await waitFor(
      'the controller reports on nowhere',
      async () => {
        const e = (await dev.get(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/environments/nowhere`)) as {
          status?: { conditions?: Array<{ type: string; status: string }> };
        };
        return e.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'False');
      },
      30_000,
    );
    const r = await kpromo(['doctor', '-n', NS, '--context', 'dev', '--check', 'controller']);
    expect(r.code).toBe(EXIT.FAILURE);
    expect(r.out).toMatch(
      new RegExp(
        `FAIL {2}controller {3}Environment nowhere: the controller cannot reach namespace ${APPS_NS} of cluster nowhere-${RUN}: .*nowhere-${RUN}`,
      ),
    );
    expect(r.out).toContain('fix: check the address and credentials the controller uses for that cluster');
    expect(r.out).toMatch(/PASS {2}controller {3}Environment dev: the controller watches/);
  });

  it('checks each delivery: a HelmRelease missing then present, a GitOps branch with its credentials, and a wrong password', async () => {
    await installFluxApiCrds(kubeConfigFor('dev', kubeconfig), ['helmreleases']);
    await applyCr(dev, {
      kind: 'Environment',
      metadata: { name: 'helm', namespace: NS },
      spec: {
        cluster: { context: 'dev' },
        namespace: APPS_NS,
        registry: { host: source, insecure: true },
        delivery: { method: 'helmRelease', helmRelease: { name: 'hr-{app}', valuesPath: 'image.tag' } },
      },
    });
    const repo = createBareRepo({ 'apps/web.yaml': 'image: x\n' });
    git = await startGitHttpServer({ root: dirname(repo.dir), users: { bob: 'bob-git-pw' } });
    const basicAuth = async (name: string, password: string) =>
      dev.create(`/api/v1/namespaces/${NS}/secrets`, {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/basic-auth',
        metadata: {
          name,
          namespace: NS,
          labels: { 'promotions.kpromo.dev/credential': 'true' },
          annotations: { 'promotions.kpromo.dev/destinations': `${git?.baseUrl}/` },
        },
        stringData: { username: 'bob', password },
      });
    await basicAuth('git-ok', 'bob-git-pw');
    await basicAuth('git-wrong', WRONG);
    const gitEnv = (name: string, secret: string) =>
      applyCr(dev, {
        kind: 'Environment',
        metadata: { name, namespace: NS },
        spec: {
          cluster: { context: 'stable' },
          namespace: APPS_NS,
          registry: { host: target, insecure: true },
          delivery: {
            method: 'git',
            git: {
              repository: git?.url('remote.git'),
              branch: 'main',
              path: 'apps/{app}.yaml',
              credentialsSecretRef: { name: secret },
            },
          },
        },
      });
    await gitEnv('gitops', 'git-ok');
    await gitEnv('gitops-wrong', 'git-wrong');

    const doctor = () => kpromo(['doctor', '-n', NS, '--context', 'dev', '--check', 'delivery']);
    const before = await doctor();
    expect(before.code).toBe(EXIT.FAILURE);
    expect(before.out).toContain(`FAIL  delivery     Environment helm HelmReleases: missing: ${APPS_NS}/hr-web (web)`);
    expect(before.out).toContain('fix: create them, or fix delivery.helmRelease.name');
    const head = gitHead(repo.dir);
    expect(before.out).toContain(
      `PASS  delivery     Environment gitops git ${git?.url('remote.git')}: branch main at ${head.slice(0, 12)}, with its credentials`,
    );
    expect(before.out).toMatch(
      /FAIL {2}delivery {5}Environment gitops-wrong git .*: .*git ls-remote failed: .*check the credentials Secret of delivery.git/,
    );
    expect(before.out + before.err).not.toContain(WRONG);
    expect(before.out + before.err).not.toContain('bob-git-pw');

    await applyHelmRelease(dev, APPS_NS, 'hr-web', { image: { tag: 'v1' } });
    const after = await doctor();
    expect(after.out).toContain('PASS  delivery     Environment helm HelmReleases: 1 found: hr-web');
  });

  it("checks the MCP endpoint and each trusted JWT issuer: the cluster's own issuer answers, a wrong one and a resource for another path fail", async () => {
    const server = dev.kc.getCurrentCluster()!.server;
    const ca = Buffer.from(dev.kc.getCurrentCluster()?.caData ?? '', 'base64').toString('utf8');
    const issuer = (await dev.get<{ issuer: string }>('/.well-known/openid-configuration')).issuer;
    // The apiserver serves its discovery document and JWKS to anonymous readers only when RBAC lets them.
    await dev.create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: DISCOVERY },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'system:service-account-issuer-discovery',
      },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:unauthenticated' }],
    });
    const jwt = (url: string) => ({
      issuer: {
        url,
        discoveryURL: `${server}/.well-known/openid-configuration`,
        certificateAuthority: ca,
        audiences: ['kpromo'],
      },
      claimMappings: { username: { claim: 'sub', prefix: 'oidc:' } },
    });
    const file = configFile(`mcp-${RUN}`, {
      mcp: { enabled: true, write: true, oauth: { resource: 'https://kpromo.example.com/other' } },
      auth: { jwt: [jwt(issuer), jwt('https://issuer.invalid')] },
    });
    const doctor = () => kpromo(['doctor', '-n', NS, '--context', 'dev', '--config', file, '--check', 'mcp']);
    const r = await waitFor(
      'discovery readable',
      async () => {
        const x = await doctor();
        return x.out.includes(`PASS  mcp          issuer ${issuer}`) ? x : undefined;
      },
      30_000,
    );
    expect(r.code).toBe(EXIT.FAILURE);
    expect(r.out).toMatch(
      new RegExp(
        `PASS {2}mcp {10}issuer ${issuer.replace(/[.]/g, '\\.')}: discovery and JWKS answer \\(\\d+ key\\(s\\)\\)`,
      ),
    );
    expect(r.out).toContain(
      `FAIL  mcp          issuer https://issuer.invalid: discovery document ${server}/.well-known/openid-configuration names issuer "${issuer}", not the configured https://issuer.invalid`,
    );
    expect(r.out).toContain(
      "FAIL  mcp          MCP OAuth resource: mcp.oauth.resource https://kpromo.example.com/other names path /other, not the endpoint's /mcp",
    );
    expect(r.out).toContain('PASS  mcp          MCP endpoint: 127.0.0.1:8090/mcp, write mode');
    // Without the config nothing can be judged, and the doctor says so.
    const bare = await kpromo(['doctor', '-n', NS, '--context', 'dev', '--check', 'mcp']);
    expect(bare.out).toContain('WARN  mcp          MCP endpoint: not checked: the controller config is needed');
  });

  it("fails an Environment where the controller's own identity may watch but not write: the missing verb, from the cluster itself", async () => {
    // The controller reaches "limited" with a ServiceAccount that may read everything in APPS_NS
    // (so its watch works and Ready is True) but patch nothing.
    const saKubeconfig = await serviceAccountKubeconfig(kubeconfig, APPS_NS, 'kpromo-limited');
    await dev.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${APPS_NS}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'read-only', namespace: APPS_NS },
      rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch'] }],
    });
    await dev.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${APPS_NS}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'read-only', namespace: APPS_NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-only' },
      subjects: [{ kind: 'ServiceAccount', name: 'kpromo-limited', namespace: APPS_NS }],
    });
    await dev.create(`/api/v1/namespaces/${NS}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'limited-kubeconfig', namespace: NS },
      stringData: { kubeconfig: readFileSync(saKubeconfig, 'utf8') },
    });
    await applyCr(dev, {
      kind: 'Environment',
      metadata: { name: 'limited', namespace: NS },
      spec: {
        cluster: { kubeconfigSecretRef: { name: 'limited-kubeconfig' } },
        namespace: APPS_NS,
        registry: { host: source, insecure: true },
        delivery: { method: 'patch' },
      },
    });
    await waitFor(
      'the controller reports its delivery rights on limited',
      async () => {
        const e = (await dev.get(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/environments/limited`)) as {
          status?: { conditions?: Array<{ type: string; status: string }> };
        };
        return e.status?.conditions?.find((c) => c.type === 'DeliveryPermitted' && c.status === 'False');
      },
      60_000,
    );
    const r = await kpromo(['doctor', '-n', NS, '--context', 'dev', '--check', 'controller']);
    expect(r.code).toBe(EXIT.FAILURE);
    expect(r.out).toMatch(/PASS {2}controller {3}Environment limited: the controller watches/);
    expect(r.out).toContain(
      `FAIL  controller   Environment limited: the controller's identity in this cluster may not patch deployments.apps in namespace ${APPS_NS}: promotions into this Environment fail until it is granted`,
    );
    expect(r.out).toContain(`fix: grant those verbs, in namespace ${APPS_NS} of that cluster`);
    // Where the controller holds the verb (its own admin identity for dev), it says so.
    const devEnv = (await dev.get(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/environments/dev`)) as {
      status?: { conditions?: Array<{ type: string; status: string }> };
    };
    expect(devEnv.status?.conditions?.find((c) => c.type === 'DeliveryPermitted')?.status).toBe('True');
  });

  it('fails the leader check when no controller holds the configured Lease', async () => {
    const r = await kpromo([
      'doctor',
      '-n',
      NS,
      '--context',
      'dev',
      '--config',
      configFile(`nobody-${RUN}`),
      '--check',
      'leader',
    ]);
    expect(r.code).toBe(EXIT.FAILURE);
    expect(r.out).toContain(`FAIL  leader       Lease ${NS}/nobody-${RUN}: no controller holds it`);
    expect(r.out).toContain('fix: is the controller running?');
  });

  it('says which checks a user without the rights could not run, and what to grant', async () => {
    const nobody = await serviceAccountKubeconfig(kubeconfig, NS, 'doctor-nobody');
    const r = await kpromo([
      '--kubeconfig',
      nobody,
      'doctor',
      '-n',
      NS,
      '--check',
      'crds',
      'admission',
      'environments',
    ]);
    expect(r.code).toBe(EXIT.FAILURE);
    expect(r.out).toMatch(/FAIL {2}crds {9}CRDs: could not check: .*forbidden/);
    expect(r.out).toMatch(/FAIL {2}admission {4}Admission policies: could not check: .*forbidden/);
    expect(r.out).toMatch(/FAIL {2}environments Environments and their clusters: could not check: .*forbidden/);
    expect(r.out).toContain('fix: run kpromo doctor as a user who may read kpromo resources');
  });

  it('refuses an unknown check with a usage error', async () => {
    const r = await kpromo(['doctor', '--check', 'nope']);
    expect(r).toMatchObject({
      code: EXIT.USAGE,
      err: expect.stringContaining(
        'unknown check(s) nope; known: crds, admission, rbac, environments, controller, registries, delivery, leader, mcp, clock',
      ),
    });
  });
});
