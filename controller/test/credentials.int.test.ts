import type { PromotionPlan } from '@kpromo/api';
import { type LocalRegistry, startBasicAuthProxy, startRegistry } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  appOf,
  controllerConfig,
  crs,
  deleteNamespaces,
  promoteAndWait,
  pushTestImage,
  registryDigest,
  restFor,
  runNamespaces,
  setupNamespaces,
  waitReady,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';

// Registries behind Basic auth: A (alice) holds the image, B (bob) receives it, C (carol) has no
// entry in the credentials Secret. One dockerconfigjson Secret serves every Environment; each
// registry must only ever see its own entry's credentials.
const names = runNamespaces('ctl-cred');
const { ns: NS, apps: APPS } = names;
const kubeconfig = inject('kubeconfig');
const dev = restFor(kubeconfig, 'dev');
const prod = restFor(kubeconfig, 'prod');
const stable = restFor(kubeconfig, 'stable');
const backends: LocalRegistry[] = [];
let A: Awaited<ReturnType<typeof startBasicAuthProxy>>;
let B: Awaited<ReturnType<typeof startBasicAuthProxy>>;
let C: Awaited<ReturnType<typeof startBasicAuthProxy>>;
let ctl: Running;
let digest: string;

const b64 = (s: string) => Buffer.from(s).toString('base64');
const CREDENTIAL = { 'promotions.kpromo.dev/credential': 'true' };
const secret = (
  name: string,
  type: string,
  stringData: Record<string, string>,
  annotations?: Record<string, string>,
  labels: Record<string, string> = CREDENTIAL,
) =>
  dev.apply(
    `/api/v1/namespaces/${NS}/secrets/${name}`,
    { apiVersion: 'v1', kind: 'Secret', type, metadata: { name, namespace: NS, labels, annotations }, stringData },
    'ctl-test',
  );

beforeAll(async () => {
  await setupNamespaces(dev, [dev, prod, stable], names);
  const regs = await Promise.all(['a', 'b', 'c'].map((n) => startRegistry({ name: `cred-${n}` })));
  backends.push(...regs);
  [A, B, C] = await Promise.all([
    startBasicAuthProxy({ target: regs[0].host, users: { alice: 'alice-pw' } }),
    startBasicAuthProxy({ target: regs[1].host, users: { bob: 'bob-pw' } }),
    startBasicAuthProxy({ target: regs[2].host, users: { carol: 'carol-pw' } }),
  ]);
  digest = (await pushTestImage({ host: regs[0].host, repository: 'shop/web', tag: 'v2.0.0', seed: 'cred-web' }))
    .digest;
  await applyDeployment(dev, APPS, 'web', `${A.host}/shop/web:v2.0.0@${digest}`);
  await applyDeployment(prod, APPS, 'web', `${B.host}/shop/web:v1.0.0`);
  // The failing stages run in stable, so they still have a candidate after prod was promoted.
  await applyDeployment(stable, APPS, 'web', `${B.host}/shop/web:v1.0.0`);
  await waitReady(dev, APPS, 'web');

  // B's user names which Secret an entry came from (bob: regcreds, which the prod stage keeps
  // using in the background; bob-pull and bob-a: the Secrets that must send nothing to B).
  const dockerconfigFor = (bUser: string) => ({
    '.dockerconfigjson': JSON.stringify({
      auths: {
        [A.host]: { auth: b64('alice:alice-pw') },
        [`http://${B.host}`]: { username: bUser, password: 'bob-pw' },
        // Never for A, B or C: another host, and the right host without the port.
        'unrelated.example.com': { username: 'unrelated', password: 'x' },
        '127.0.0.1': { username: 'no-port', password: 'x' },
      },
    }),
  });
  const dockerconfig = dockerconfigFor('bob');
  // Opted in (label); its auths keys name where each entry goes.
  await secret('regcreds', 'kubernetes.io/dockerconfigjson', dockerconfig);
  // The same entries, but its owner never said kpromo may send them (an image pull Secret of the team).
  await secret('pullsecret', 'kubernetes.io/dockerconfigjson', dockerconfigFor('bob-pull'), undefined, {});
  // Opted in, but only for registry A: B's entry stays home.
  await secret('regcreds-a', 'kubernetes.io/dockerconfigjson', dockerconfigFor('bob-a'), {
    'promotions.kpromo.dev/destinations': `http://${A.host}/`,
  });
  await secret('opaque', 'Opaque', { username: 'bob', password: 'bob-pw' });
  await secret(
    'gitcreds',
    'kubernetes.io/basic-auth',
    { username: 'bot', password: 'git-pw' },
    { 'promotions.kpromo.dev/destinations': 'https://git.example.com/org/' },
  );
  // The older URL prefix annotation without the opt-in label: refused.
  await secret(
    'gitcreds-unlabelled',
    'kubernetes.io/basic-auth',
    { username: 'bot', password: 'git-pw' },
    { 'promotions.kpromo.dev/url': 'https://git.example.com/org/' },
    {},
  );
  const env = (name: string, context: string, registry: object, delivery: object = { method: 'patch' }) =>
    applyCr(dev, crs.environment(NS, name, { context, namespace: APPS, registry, delivery }));
  const reg = (host: string, secretName = 'regcreds') => ({
    host,
    insecure: true,
    credentialsSecretRef: { name: secretName },
  });
  await env('dev', 'dev', reg(A.host));
  await env('prod', 'prod', reg(B.host));
  await env('nocreds', 'stable', reg(C.host));
  await env('wrongtype', 'stable', reg(B.host, 'opaque'));
  await env('gitother', 'stable', reg(B.host), {
    method: 'git',
    git: {
      repository: 'https://git.example.com/other-org/gitops.git',
      path: 'x.yaml',
      credentialsSecretRef: { name: 'gitcreds' },
    },
  });
  await env('pulls', 'stable', reg(B.host, 'pullsecret'));
  await env('aonly', 'stable', reg(B.host, 'regcreds-a'));
  await env('gitnolabel', 'stable', reg(B.host), {
    method: 'git',
    git: {
      repository: 'https://git.example.com/org/gitops.git',
      path: 'x.yaml',
      credentialsSecretRef: { name: 'gitcreds-unlabelled' },
    },
  });
  for (const to of ['prod', 'nocreds', 'wrongtype', 'gitother', 'pulls', 'aonly', 'gitnolabel'])
    await applyCr(dev, crs.flow(NS, to, ['dev', to]));
  await applyCr(dev, crs.application(NS, 'web', 'team-a'));

  ctl = await startController(
    controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false }, maxAttempts: 2 }),
    {
      log: createLogger({ level: process.env.CTL_TEST_LOG ?? 'silent' }),
    },
  );
});

afterAll(async () => {
  await ctl?.stop();
  await Promise.all([A, B, C].map((p) => p?.stop()));
  await Promise.all(backends.map((r) => r.stop()));
  await deleteNamespaces(dev, [dev, prod, stable], names);
});

const promote = (to: string): Promise<PromotionPlan> =>
  promoteAndWait(ctl.port, dev, { namespace: NS, flow: to, from: 'dev', to, name: `to-${to}` }, { timeoutMs: 120_000 });

describe('credentials only go to the host they name', () => {
  it('copies A -> B with A entry for A and B entry for B, nothing else anywhere', async () => {
    const p = await promote('prod');
    expect(p.status?.phase).toBe('Complete');
    const app = appOf(p, 'web')!;
    expect(await registryDigest(backends[1].host, 'shop/web', app.targetTag!)).toBe(digest);
    // Each registry saw only its own user (and requests without credentials before the challenge).
    expect(A.seen.some((s) => s.user === 'alice' && s.valid)).toBe(true);
    expect(B.seen.some((s) => s.user === 'bob' && s.valid)).toBe(true);
    expect(new Set(A.seen.map((s) => s.user ?? 'none'))).toEqual(new Set(['none', 'alice']));
    expect(new Set(B.seen.map((s) => s.user ?? 'none'))).toEqual(new Set(['none', 'bob']));
    expect(B.seen.some((s) => s.method === 'PUT' && s.path.includes('/manifests/') && s.valid)).toBe(true);
  });

  it('sends nothing to a registry without an entry, and says so when it answers 401', async () => {
    const before = C.seen.length;
    const p = await promote('nocreds');
    const app = appOf(p, 'web')!;
    expect(app).toMatchObject({ phase: 'Failed', reason: 'RegistryUnauthorized' });
    expect(app.message).toContain(`no credentials in Secret ${NS}/regcreds for host ${C.host}`);
    expect(C.seen.length).toBeGreaterThan(before);
    expect(C.seen.every((s) => s.user === undefined)).toBe(true);
  });

  it('refuses a registry credentials Secret of another type, naming it and the expected type', async () => {
    const p = await promote('wrongtype');
    const app = appOf(p, 'web')!;
    expect(app).toMatchObject({ phase: 'Failed', reason: 'CredentialsInvalid', attempts: 1 });
    expect(app.message).toBe(
      `Secret ${NS}/opaque has type Opaque, but registry credentials (key .dockerconfigjson) must be a Secret of type kubernetes.io/dockerconfigjson (Environment wrongtype registry credentials)`,
    );
    expect(app.copied).toBeFalsy();
  });

  it('refuses git credentials for a repository outside the destinations of their Secret', async () => {
    const p = await promote('gitother');
    const app = appOf(p, 'web')!;
    expect(app).toMatchObject({ phase: 'Failed', reason: 'CredentialsNotAllowed', attempts: 1, copied: true });
    expect(app.message).toBe(
      `Secret ${NS}/gitcreds (spec.delivery.git.credentialsSecretRef) may be sent only to https://git.example.com/org/, not to https://git.example.com (spec.delivery.git.repository); if it should go there, its owner adds "git.example.com" to annotation promotions.kpromo.dev/destinations (Environment gitother delivery.git)`,
    );
    expect(app.written).toBeFalsy();
  });
});

describe('credentials only leave in Secrets whose owner opted in (issue 31)', () => {
  const seenAtB = (user: string) => B.seen.filter((s) => s.user === user).length;

  it('sends nothing of a dockerconfigjson Secret without the credential label, and says what to add', async () => {
    const p = await promote('pulls');
    const app = appOf(p, 'web')!;
    expect(app).toMatchObject({ phase: 'Failed', reason: 'CredentialsNotAllowed', attempts: 1 });
    expect(app.message).toBe(
      `Secret ${NS}/pullsecret (spec.registry.credentialsSecretRef) is not marked as a credential kpromo may send: its owner must label it promotions.kpromo.dev/credential=true (its entries go to the hosts they name; annotation promotions.kpromo.dev/destinations can narrow them) (Environment pulls registry credentials)`,
    );
    expect(app.copied).toBeFalsy();
    expect(seenAtB('bob-pull')).toBe(0);
  });

  it('keeps an entry home when the destinations annotation leaves its registry out', async () => {
    const p = await promote('aonly');
    const app = appOf(p, 'web')!;
    expect(app).toMatchObject({ phase: 'Failed', reason: 'CredentialsNotAllowed', attempts: 1 });
    expect(app.message).toBe(
      `Secret ${NS}/regcreds-a (spec.registry.credentialsSecretRef) may be sent only to http://${A.host}/, not to http://${B.host} (registry host ${B.host}); if it should go there, its owner adds "http://${B.host}/" to annotation promotions.kpromo.dev/destinations (Environment aonly registry credentials)`,
    );
    expect(seenAtB('bob-a')).toBe(0);
  });

  it('refuses git credentials whose Secret names a URL prefix but never opted in', async () => {
    const p = await promote('gitnolabel');
    const app = appOf(p, 'web')!;
    expect(app).toMatchObject({ phase: 'Failed', reason: 'CredentialsNotAllowed', attempts: 1, copied: true });
    expect(app.message).toBe(
      `Secret ${NS}/gitcreds-unlabelled (spec.delivery.git.credentialsSecretRef) is not marked as a credential kpromo may send: its owner must label it promotions.kpromo.dev/credential=true and list where it may go in annotation promotions.kpromo.dev/destinations (e.g. "git.example.com") (Environment gitnolabel delivery.git)`,
    );
    expect(app.written).toBeFalsy();
  });
});
