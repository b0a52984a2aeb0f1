// `yarn portal`: the example Backstage portal against the local clusters, with real data.
//
// 1. builds the frontend with the Backstage CLI (`backstage-cli package build`, Rspack; new frontend
//    system with feature discovery) when packages/app/dist is missing or --build is passed, reusing
//    the build of identical inputs kept in the harness's cache (frontendBuild.ts); --rebuild always builds;
// 2. resets the `kpromo-portal` namespace on the dev/stable/prod clusters and deploys the sample
//    `shop` release (dev runs v1.1.0, stable and prod v1.0.0), with two local OCI registries;
// 3. grants Kubernetes RBAC: the backend's token user may impersonate the portal's users (the
//    controller then authorises every call as the Backstage user), the guest user may manage and
//    approve/roll back promotions in the namespace; the search collator's service identity may read;
// 4. starts the kpromo controller (JSON API + MCP over Streamable HTTP, write mode, with a static
//    token for the Backstage backend);
// 5. starts the Backstage backend (catalog + kpromo catalog module, permissions, guest auth, MCP
//    actions, @kpromo/plugin-promotions-backend, app-backend serving the frontend).
// Prints "portal ready at <url>" and runs until SIGINT/SIGTERM.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, startController } from '@kpromo/controller';
import { DEFAULT_BLUEPRINTS, DEFAULT_RESOURCES } from '@kpromo/exporter';
import { applyManifest, cacheRoot, kubeConfigFor, setUpSampleRelease } from '@kpromo/test-harness';
import { ensureFrontendBuild } from './frontendBuild.js';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const PORT = Number(flag('port') ?? process.env.PORTAL_PORT ?? 7007);
const NS = flag('namespace') ?? 'kpromo-portal';
const CONTROLLER_PORT = Number(flag('controller-port') ?? 17680);
const MCP_PORT = Number(flag('mcp-port') ?? CONTROLLER_PORT + 1);
const REGISTRY_PORT = Number(flag('registry-port') ?? 17611);
/** An app-config file given after the others (e.g. promotions.assistant.llm for a model endpoint). */
const EXTRA_CONFIG = flag('extra-config');
const here = import.meta.dirname;
const portal = join(here, '..');
const say = (m: string) => console.log(`\x1b[35m▸\x1b[0m ${m}`);
/** The Kubernetes user of the Backstage backend's static token (promotions.controller.token). */
const BACKEND_USER = 'backstage-portal';
/** Who signs in to the portal: the guest provider's user, and the read-only demo user. */
const PORTAL_USERS = ['user:development/guest', 'user:development/viewer'];
/**
 * The search plugin's service identity: its kpromo collator reads through /api/promotions, which
 * calls the controller as this user (read-only RBAC below).
 */
const SEARCH_USER = 'service:plugin:search';
/**
 * The groups the portal's users are in (catalog/org.yaml): the backend names a user's ownership refs
 * in x-kpromo-groups, so it must be allowed to impersonate those groups too.
 */
const PORTAL_GROUPS = ['group:default/team-shop', 'group:default/team-payments', 'group:default/platform'];
/** Users who may approve and roll back promotions into the demo environments. */
const RELEASERS = ['user:development/guest'];
const ENVIRONMENTS = ['dev', 'stable', 'prod'];
const rbacGroup = 'rbac.authorization.k8s.io';

/**
 * Kubernetes RBAC for the portal: the backend's token user may impersonate exactly the portal's
 * users (and nothing else: no rights of its own), and the releasers get the kpromo release verbs
 * approve and rollback on the demo Environments (resourceNames) and may stop and lift the line. The sample release already lets
 * them read and create plans in the namespace.
 */
async function grantPortalRbac(kubeconfigPath: string, ns: string) {
  const control = kubeConfigFor('dev', kubeconfigPath);
  await applyManifest(control, {
    apiVersion: `${rbacGroup}/v1`,
    kind: 'ClusterRole',
    metadata: { name: 'kpromo-portal-backend-impersonator' },
    rules: [
      { apiGroups: [''], resources: ['users'], verbs: ['impersonate'], resourceNames: [...PORTAL_USERS, SEARCH_USER] },
      { apiGroups: [''], resources: ['groups'], verbs: ['impersonate'], resourceNames: PORTAL_GROUPS },
    ],
  });
  await applyManifest(control, {
    apiVersion: `${rbacGroup}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name: 'kpromo-portal-backend-impersonator' },
    roleRef: { apiGroup: rbacGroup, kind: 'ClusterRole', name: 'kpromo-portal-backend-impersonator' },
    subjects: [{ apiGroup: rbacGroup, kind: 'User', name: BACKEND_USER }],
  });
  await applyManifest(control, {
    apiVersion: `${rbacGroup}/v1`,
    kind: 'Role',
    metadata: { name: 'kpromo-portal-releaser', namespace: ns },
    rules: [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['environments'],
        resourceNames: ENVIRONMENTS,
        verbs: ['approve', 'rollback'],
      },
      // On call: they may stop the line during an incident and lift it again.
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['linestops'],
        verbs: ['get', 'list', 'watch', 'create', 'delete'],
      },
    ],
  });
  await applyManifest(control, {
    apiVersion: `${rbacGroup}/v1`,
    kind: 'RoleBinding',
    metadata: { name: 'kpromo-portal-releaser', namespace: ns },
    roleRef: { apiGroup: rbacGroup, kind: 'Role', name: 'kpromo-portal-releaser' },
    subjects: RELEASERS.map((name) => ({ apiGroup: rbacGroup, kind: 'User', name })),
  });
  // The search collator reads applications, environments and plans; nothing else.
  await applyManifest(control, {
    apiVersion: `${rbacGroup}/v1`,
    kind: 'Role',
    metadata: { name: 'kpromo-portal-search-reader', namespace: ns },
    rules: [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['applications', 'environments', 'promotionflows', 'promotionplans'],
        verbs: ['get', 'list', 'watch'],
      },
    ],
  });
  await applyManifest(control, {
    apiVersion: `${rbacGroup}/v1`,
    kind: 'RoleBinding',
    metadata: { name: 'kpromo-portal-search-reader', namespace: ns },
    roleRef: { apiGroup: rbacGroup, kind: 'Role', name: 'kpromo-portal-search-reader' },
    subjects: [{ apiGroup: rbacGroup, kind: 'User', name: SEARCH_USER }],
  });
}

/**
 * Builds the frontend as Backstage adopters do: `backstage-cli package build` in packages/app (see
 * its package.json), which bundles with Rspack, discovers the frontend plugins among the app's
 * dependencies (`app.packages: all`) and writes what @backstage/plugin-app-backend serves.
 */
function buildFrontend() {
  const app = join(portal, 'packages/app');
  execFileSync(
    process.execPath,
    [
      join(portal, '../../node_modules/@backstage/cli/bin/backstage-cli'),
      'package',
      'build',
      '--config',
      join(portal, 'app-config.yaml'),
    ],
    {
      cwd: app,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: {
        ...process.env,
        // whatever NODE_ENV the caller has (vitest sets "test"): a production bundle
        NODE_ENV: 'production',
        // only the path of app.baseUrl matters for the bundle; the backend injects the real config
        PORTAL_PORT: String(PORT),
        NODE_OPTIONS: [process.env.NODE_OPTIONS, `--require ${join(here, 'backstageCliResolve.cjs')}`]
          .filter(Boolean)
          .join(' '),
      },
    },
  );
}

async function main() {
  const t0 = Date.now();
  const dist = join(portal, 'packages/app/dist/index.html.tmpl');
  if (args.includes('--rebuild')) {
    say('building the frontend (backstage-cli package build)…');
    buildFrontend();
  } else if (args.includes('--build') || !existsSync(dist)) {
    const t = Date.now();
    const { built, hash } = ensureFrontendBuild({
      repo: join(portal, '../..'),
      app: 'examples/portal/packages/app',
      extraInputs: ['examples/portal/app-config.yaml', 'examples/portal/scripts/backstageCliResolve.cjs'],
      cacheDir: join(cacheRoot(), 'portal-frontend'),
      build: () => {
        say('building the frontend (backstage-cli package build)…');
        buildFrontend();
      },
    });
    say(
      `frontend ${built ? 'built' : 'reused'} for inputs ${hash.slice(0, 12)} in ${((Date.now() - t) / 1000).toFixed(1)} s`,
    );
  }

  say(`sample release in namespace ${NS} on the local clusters…`);
  const sample = await setUpSampleRelease({
    namespace: NS,
    registryPort: REGISTRY_PORT,
    users: ['user:development/guest'],
    label: 'portal',
    log: console.log,
  });

  await grantPortalRbac(sample.kubeconfigPath, NS);

  const tmp = mkdtempSync(join(tmpdir(), 'kpromo-portal-'));
  // The Backstage backend's token for the controller (JSON API and MCP). Its user has no kpromo
  // rights: every call is made as the signed-in Backstage user it impersonates.
  const backendToken = randomBytes(24).toString('hex');
  const tokensFile = join(tmp, 'controller-tokens.yaml');
  writeFileSync(tokensFile, `tokens:\n  - token: ${backendToken}\n    username: ${BACKEND_USER}\n`, {
    mode: 0o600,
  });
  const controller = await startController(
    loadConfig({
      env: {},
      flags: {
        kubeconfig: sample.kubeconfigPath,
        context: 'dev',
        namespaces: [NS],
        defaultNamespace: NS,
        logLevel: process.env.KPROMO_LOG_LEVEL ?? 'warn',
        server: { host: '127.0.0.1', port: CONTROLLER_PORT },
        leaderElection: { namespace: NS },
        // The local clusters' kubeconfig can create TokenReviews too, but the portal only needs its static token.
        auth: { staticTokensFile: tokensFile, tokenReview: false },
        mcp: { enabled: true, host: '127.0.0.1', port: MCP_PORT, write: true },
        // The sample Environments (namespace NS) may use the local clusters' contexts, nothing else.
        clusterAccess: [{ namespaces: [NS], contexts: sample.clusters.map((c) => c.name) }],
        // The sample registry listens on loopback, which registry traffic may reach only when allowed.
        egress: { allowedCidrs: ['127.0.0.1/32'] },
      },
    }),
  );
  say(`controller API http://127.0.0.1:${controller.port}/api/v1, MCP http://127.0.0.1:${MCP_PORT}/mcp`);

  // The local clusters are shared (other demos and test suites have their own namespaces there): the
  // catalog shows this portal's namespace only. Config files given later override earlier ones.
  const namespaceConfig = join(tmp, 'app-config.namespace.yaml');
  writeFileSync(
    namespaceConfig,
    JSON.stringify({
      kpromo: {
        exporter: {
          includeDefaults: false,
          blueprints: DEFAULT_BLUEPRINTS,
          resources: DEFAULT_RESOURCES.map((r) => ({ ...r, selector: { query: `.metadata.namespace == "${NS}"` } })),
        },
      },
    }),
  );
  const backend: ChildProcess = spawn(
    process.execPath,
    [
      join(portal, '../../node_modules/tsx/dist/cli.mjs'),
      'src/index.ts',
      '--config',
      join(portal, 'app-config.yaml'),
      '--config',
      namespaceConfig,
      ...(EXTRA_CONFIG ? ['--config', EXTRA_CONFIG] : []),
    ],
    {
      cwd: join(portal, 'packages/backend'),
      stdio: ['ignore', 'inherit', 'inherit'],
      env: {
        ...process.env,
        NODE_ENV: 'development',
        PORTAL_PORT: String(PORT),
        KPROMO_KUBECONFIG: sample.kubeconfigPath,
        KPROMO_CONTROLLER_URL: `http://127.0.0.1:${controller.port}`,
        KPROMO_MCP_URL: `http://127.0.0.1:${MCP_PORT}/mcp`,
        KPROMO_CONTROLLER_TOKEN: backendToken,
        KPROMO_NAMESPACE: NS,
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
      },
    },
  );
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    backend.kill('SIGTERM');
    await controller.stop().catch(() => undefined);
    await sample.stop().catch(() => undefined);
    process.exit(code);
  };
  backend.once('exit', (code) => {
    if (!stopping) {
      console.error(`backstage backend exited (${code})`);
      void stop(1);
    }
  });
  process.once('SIGINT', () => void stop(0));
  process.once('SIGTERM', () => void stop(0));

  const url = `http://localhost:${PORT}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    const ok = await fetch(`${url}/.backstage/health/v1/readiness`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) break;
    if (Date.now() > deadline) throw new Error('the Backstage backend did not become ready in 180s');
    await new Promise((r) => setTimeout(r, 1000));
  }
  await waitForCatalog(url, deadline);
  say(`portal ready at ${url}/promotions (${((Date.now() - t0) / 1000).toFixed(0)}s; Ctrl-C stops)`);
}

/**
 * Ready means usable: the org data is in the catalog (so the guest signs in as the catalog user, with
 * the groups that own the sample apps) and the kpromo provider has delivered the sample apps.
 */
async function waitForCatalog(url: string, deadline: number) {
  for (;;) {
    const identity = await fetch(`${url}/api/auth/guest/refresh?env=development`, {
      headers: { 'X-Requested-With': 'XMLHttpRequest' },
    })
      .then(
        (r) =>
          r.json() as Promise<{ backstageIdentity?: { token: string; identity: { ownershipEntityRefs?: string[] } } }>,
      )
      .catch(() => undefined);
    const token = identity?.backstageIdentity?.token;
    const grouped = identity?.backstageIdentity?.identity.ownershipEntityRefs?.some((r) => r.startsWith('group:'));
    const apps =
      token && grouped
        ? await fetch(`${url}/api/catalog/entities/by-name/component/default/checkout`, {
            headers: { Authorization: `Bearer ${token}` },
          })
            .then((r) => r.ok)
            .catch(() => false)
        : false;
    if (apps) return;
    if (Date.now() > deadline) throw new Error('the catalog did not get the org data and the sample apps in time');
    await new Promise((r) => setTimeout(r, 1000));
  }
}

main().catch((e: unknown) => {
  console.error(`portal failed: ${e instanceof Error ? e.stack : String(e)}`);
  process.exit(1);
});
