import { chmodSync, chownSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBareRepo, freePort, kubeConfigFor, startGitHttpServer, waitFor } from '@kpromo/test-harness';
import { app, crs, deleteNamespace, ensureKpromoCrds, ensureNamespace, env } from '@kpromo/test-harness/crs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { snapshotReader } from './bundle.js';
import { type AppName, buildImage, metadataFromCheckout, sharedLayers } from './images.js';
import type { Image } from './oci.js';
import { MEDIA_TYPES } from './oci.js';
import { NODE, NONROOT } from './pins.js';
import { pushImage } from './push.js';
import { type PulledImage, pullAndUnpack, runInImage, runToEnd, signalImage } from './sandbox.js';

// Builds both images twice from this checkout, pushes one build to the harness's real registry
// (CNCF distribution), pulls it back by digest and runs it without a container engine: unpacked into
// a root file system and started there as the image's user in fresh mount and PID namespaces
// (unshare; this needs root, as the project's machines run tests). The controller runs from the
// image against the local clusters.

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const RUN = `${Date.now().toString(36)}`;
const NS = `image-${RUN}`;
const TOKEN = `image-test-token-${RUN}-0123456789`;
const names: AppName[] = ['controller', 'exporter'];

let first: Record<string, Image>;
let second: Record<string, Image>;
const pulled: Partial<Record<AppName, PulledImage>> = {};

beforeAll(async () => {
  // Two complete builds (metadata, every layer, both esbuild runs) of one snapshot of the workspace
  // sources: others may be editing this checkout meanwhile, and a build of the same commit is
  // what must be reproducible.
  const snapshot = snapshotReader();
  const metas = [metadataFromCheckout(REPO_ROOT), metadataFromCheckout(REPO_ROOT)];
  const shared = metas.map((m) => sharedLayers(m));
  first = {};
  second = {};
  for (const n of names) {
    first[n] = (await buildImage(n, metas[0], shared[0], snapshot)).image;
    second[n] = (await buildImage(n, metas[1], shared[1], snapshot)).image;
  }
  const host = inject('registries').target;
  for (const n of names) {
    const ref = { host, repository: `kpromo-image-${RUN}/${n}`, tag: 'test' };
    const digest = await pushImage(first[n], ref);
    pulled[n] = await pullAndUnpack(ref, digest);
  }
}, 900_000);

// Each unpacked image is some 200 MB of /tmp: a run must not leave them behind.
afterAll(() => {
  for (const p of Object.values(pulled)) rmSync(dirname(p.rootfs), { recursive: true, force: true });
});

describe('kpromo images', () => {
  it('two builds of the same checkout give the same manifest digests', () => {
    const digests = (img: Image) => ({
      layers: img.layers.map((l) => l.blob.digest),
      config: img.config.digest,
      manifest: img.manifest.digest,
    });
    for (const n of names) expect(digests(second[n]), n).toEqual(digests(first[n]));
    // The base and Node layers are shared: a registry stores them once for both images.
    expect(first.exporter.layers[0].blob.digest).toBe(first.controller.layers[0].blob.digest);
    expect(first.exporter.layers[1].blob.digest).toBe(first.controller.layers[1].blob.digest);
  });

  it('pulled back by digest: OCI media types, non-root user, entrypoint, working dir and labels', () => {
    const c = pulled.controller!;
    expect(c.manifest.mediaType).toBe(MEDIA_TYPES.ociManifest);
    expect(c.manifest.config.mediaType).toBe(MEDIA_TYPES.ociConfig);
    expect(c.manifest.layers.map((l) => l.mediaType)).toEqual(Array(4).fill(MEDIA_TYPES.ociLayerGzip));
    expect(pulled.exporter!.manifest.layers).toHaveLength(3); // no git layer
    for (const n of names) {
      const cfg = pulled[n]!.config;
      expect(cfg).toMatchObject({ architecture: 'amd64', os: 'linux' });
      expect(cfg.config.User).toBe(`${NONROOT.uid}:${NONROOT.gid}`);
      expect(cfg.config.WorkingDir).toBe('/app');
      // The exporter trades speed for memory (deploy/image/images.ts); the controller runs as V8 defaults.
      const flags = n === 'exporter' ? ['--optimize-for-size', '--liftoff-only'] : [];
      expect(cfg.config.Entrypoint).toEqual(['/nodejs/bin/node', ...flags, `/app/kpromo-${n}.mjs`]);
      expect(cfg.config.Env).toContain('NODE_ENV=production');
      expect(cfg.config.Env).toContain('MALLOC_ARENA_MAX=2');
      const labels = cfg.config.Labels;
      expect(labels['org.opencontainers.image.title']).toBe(`kpromo-${n}`);
      expect(labels['org.opencontainers.image.revision']).toMatch(/^[0-9a-f]{40}(-dirty)?$/);
      expect(labels['org.opencontainers.image.version']).toBe('0.1.0');
      expect(new Date(labels['org.opencontainers.image.created']).toISOString()).toBe(
        labels['org.opencontainers.image.created'],
      );
      for (const k of ['source', 'licenses']) expect(labels[`org.opencontainers.image.${k}`]).toBeTruthy();
    }
    expect(pulled.controller!.config.config.Cmd).toEqual(['run']);
  });

  it('runs as uid/gid 65532 with no group but its own, as PID 1, in /app, with only the image environment', async () => {
    const img = pulled.controller!;
    const probe =
      'console.log(JSON.stringify({uid:process.getuid(),gid:process.getgid(),groups:process.getgroups(),pid:process.pid,cwd:process.cwd(),env:process.env}))';
    const r = await runToEnd(runInImage(img, [], { command: ['/nodejs/bin/node', '-e', probe] }));
    expect(r.stderr).toBe('');
    const seen = JSON.parse(r.stdout);
    expect(seen).toMatchObject({ uid: 65532, gid: 65532, groups: [65532], pid: 1, cwd: '/app' });
    expect(Object.keys(seen.env).sort()).toEqual(['HOME', 'MALLOC_ARENA_MAX', 'NODE_ENV', 'PATH']);
  });

  it(`node is the pinned ${NODE.version}; the apps answer --version and --help from their one-file bundles`, async () => {
    const node = await runToEnd(runInImage(pulled.exporter!, [], { command: ['/nodejs/bin/node', '--version'] }));
    expect(node.stdout.trim()).toBe(`v${NODE.version}`);
    const ctl = await runToEnd(runInImage(pulled.controller!, ['--help']));
    expect(ctl.code).toBe(0);
    expect(ctl.stdout).toMatch(/^Usage: kpromo-controller/);
    expect(ctl.stdout).toMatch(/\brun\b.*run the controller/);
    const exp = await runToEnd(runInImage(pulled.exporter!, ['--help']));
    expect(exp.code).toBe(0);
    expect(exp.stdout).toMatch(/^Usage: kpromo-exporter/);
    for (const img of [pulled.controller!, pulled.exporter!]) {
      const v = await runToEnd(runInImage(img, ['--version']));
      expect(v.code).toBe(0);
      expect(v.stdout.trim()).toBe('0.1.0');
    }
  });

  it('the exporter compiles jq inside the image (jq-wasm bundled inline): a bad expression is reported by jq', async () => {
    const img = pulled.exporter!;
    writeFileSync(
      join(img.rootfs, 'tmp/exporter.yaml'),
      [
        'resources:',
        '  - kind: v1/configmaps',
        '    selector:',
        '      query: .metadata.name |||',
        '    port:',
        '      entity:',
        '        mappings:',
        '          - { identifier: .metadata.name, blueprint: \'"cm"\' }',
        '',
      ].join('\n'),
    );
    const r = await runToEnd(runInImage(img, [], { env: { KPROMO_EXPORTER_CONFIG: '/tmp/exporter.yaml' } }));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/selector\.query: jq expression "\.metadata\.name \|\|\|" does not compile: syntax error/);
  });

  it('git in the controller image clones, commits and pushes over HTTP with Basic auth as the non-root user', async () => {
    const img = pulled.controller!;
    const repo = createBareRepo({ 'values.yaml': 'image:\n  tag: v1\n' });
    const server = await startGitHttpServer({ root: resolve(repo.dir, '..'), users: { bot: 's3cret' } });
    try {
      const auth = `Authorization: Basic ${Buffer.from('bot:s3cret').toString('base64')}`;
      // Credentials through git's environment, as controller/src/delivery/gitCommit.ts passes them.
      const gitEnv = {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'http.extraHeader',
        GIT_CONFIG_VALUE_0: auth,
        GIT_TERMINAL_PROMPT: '0',
        GIT_AUTHOR_NAME: 'kpromo',
        GIT_AUTHOR_EMAIL: 'kpromo@noreply.local',
        GIT_COMMITTER_NAME: 'kpromo',
        GIT_COMMITTER_EMAIL: 'kpromo@noreply.local',
      };
      const git = (...args: string[]) =>
        runToEnd(runInImage(img, [], { env: gitEnv, command: ['/usr/bin/git', ...args] }));
      const clone = await git('clone', '--depth', '1', '--branch', 'main', server.url('remote.git'), '/tmp/work');
      expect(clone.stderr).not.toMatch(/fatal|error/);
      expect(clone.code).toBe(0);
      writeFileSync(join(img.rootfs, 'tmp/work/values.yaml'), 'image:\n  tag: v2\n');
      expect((await git('-C', '/tmp/work', 'commit', '-q', '-am', 'from the image')).code).toBe(0);
      const push = await git('-C', '/tmp/work', 'push', '-q', 'origin', 'main');
      expect(push.stderr).toBe('');
      expect(push.code).toBe(0);
      expect(repo.log()[0]).toBe('from the image');
      expect(repo.read('values.yaml')).toBe('image:\n  tag: v2');
      expect(server.requests.some((r) => r.user === 'bot' && r.path.includes('git-receive-pack'))).toBe(true);
    } finally {
      await server.stop();
    }
  });

  describe('the controller from the image against the local clusters', () => {
    const kc = kubeConfigFor('dev');
    beforeAll(async () => {
      await ensureKpromoCrds(kc);
      await ensureNamespace(kc, NS);
      const c = crs(kc, NS);
      await c.create('environments', env('dev'));
      await c.create('applications', app('image-web'));
    });
    afterAll(() => deleteNamespace(kc, NS));

    it("becomes ready and lists the namespace's Applications for an authenticated caller", async () => {
      const img = pulled.controller!;
      // What the chart mounts: the config at /etc/kpromo, credentials readable by the user only.
      const etc = join(img.rootfs, 'etc/kpromo');
      mkdirSync(etc, { recursive: true });
      const port = await freePort();
      const files: Record<string, string> = {
        kubeconfig: readFileSync(inject('kubeconfig'), 'utf8'),
        'tokens.yaml': `tokens:\n  - token: ${TOKEN}\n    username: image-test-admin\n    groups: [system:masters]\n`,
        'config.yaml': [
          'kubeconfig: /etc/kpromo/kubeconfig',
          'context: dev',
          `namespaces: [${NS}]`,
          `defaultNamespace: ${NS}`,
          `server: { host: 127.0.0.1, port: ${port} }`,
          'auth: { staticTokensFile: /etc/kpromo/tokens.yaml }',
          `clusterAccess: [{ namespaces: [${NS}], contexts: [dev] }]`,
          'leaderElection: { enabled: false }',
          '',
        ].join('\n'),
      };
      for (const [name, text] of Object.entries(files)) {
        writeFileSync(join(etc, name), text);
        chownSync(join(etc, name), NONROOT.uid, NONROOT.gid);
        chmodSync(join(etc, name), 0o600);
      }
      const child = runInImage(img, ['run', '--config', '/etc/kpromo/config.yaml']);
      let log = '';
      child.stdout?.on('data', (d) => (log += d));
      child.stderr?.on('data', (d) => (log += d));
      const exited = new Promise((r) => child.once('close', r));
      try {
        const base = `http://127.0.0.1:${port}`;
        await waitFor(
          `controller from the image ready on ${base}\n${log}`,
          async () => (await fetch(`${base}/readyz`)).ok,
          120_000,
          500,
        );
        expect((await fetch(`${base}/healthz`)).status).toBe(200);
        const anonymous = await fetch(`${base}/api/v1/applications?namespace=${NS}`);
        expect(anonymous.status).toBe(401);
        const res = await fetch(`${base}/api/v1/applications?namespace=${NS}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        const body = await res.text();
        expect(res.status, body).toBe(200);
        expect(body).toContain('"image-web"');
      } finally {
        signalImage(child, 'SIGTERM');
        const killer = setTimeout(() => signalImage(child, 'SIGKILL'), 20_000);
        await exited;
        clearTimeout(killer);
      }
      expect(log).toContain('shutting down');
    });
  });
});
