import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AdoptUsageError } from '../src/adopt/run.js';
import { builtinDeliveryMethods as deliveryMethods } from '../src/delivery/registry.js';
import { DoctorUsageError } from '../src/doctor/check.js';
import { checkAddress } from '../src/net/egressPolicy.js';
import { planAdoption } from '../src/session/adopt.js';
import { openDoctorContext } from '../src/session/doctor.js';
import { type ContextProblem, openKubeconfig } from '../src/session/kubeconfig.js';
import { openLocalApi } from '../src/session/localApi.js';
import { ConfigError } from '../src/util/configError.js';

// How every local session reads the caller's kubeconfig (session/kubeconfig.ts), and how each front
// end words a context the kubeconfig lacks. Nothing here reaches a cluster: each refusal comes first.

/** A kubeconfig with contexts a (namespace team-a) and b, current context `current` when given. */
function kubeconfigFile(current?: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'kpromo-session-')), 'kubeconfig');
  const cluster = (name: string) => ({ name, cluster: { server: `https://${name}.invalid:6443` } });
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [cluster('a'), cluster('b')],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [
        { name: 'a', context: { cluster: 'a', user: 'u', namespace: 'team-a' } },
        { name: 'b', context: { cluster: 'b', user: 'u' } },
      ],
      ...(current ? { 'current-context': current } : {}),
    }),
  );
  return file;
}

const refusal = (p: ContextProblem) => Object.assign(new Error(p.kind), { problem: p });

/** What `f` throws or rejects with; fails when it does neither. */
async function refusedWith(f: () => unknown): Promise<Error> {
  try {
    await f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('not refused');
}

describe('openKubeconfig: the control context of a local session', () => {
  it("takes the current context and its namespace; other contexts' clients and namespaces on demand", () => {
    const k = openKubeconfig({ kubeconfig: kubeconfigFile('a') }, refusal);
    expect(k.context).toBe('a');
    expect(k.namespace).toBe('team-a');
    expect(k.kubeconfig.getCurrentContext()).toBe('a');
    expect(k.clientFor('b')?.clusterName).toBe('b');
    expect(k.clientFor('nowhere')).toBeUndefined();
    expect(k.namespaceOf('b')).toBe('default');
  });

  it('takes the context asked for over the current one', () => {
    const k = openKubeconfig({ kubeconfig: kubeconfigFile('a'), context: 'b' }, refusal);
    expect([k.context, k.namespace, k.kubeconfig.getCurrentContext()]).toEqual(['b', 'default', 'b']);
  });

  it('refuses a context the kubeconfig lacks, naming those it has, and a kubeconfig without a current one', async () => {
    const problemOf = async (f: () => unknown) =>
      ((await refusedWith(f)) as Error & { problem: ContextProblem }).problem;
    expect(
      await problemOf(() => openKubeconfig({ kubeconfig: kubeconfigFile('a'), context: 'nowhere' }, refusal)),
    ).toEqual({ kind: 'unknownContext', context: 'nowhere', contexts: '(it has: a, b)' });
    expect(await problemOf(() => openKubeconfig({ kubeconfig: kubeconfigFile() }, refusal))).toEqual({
      kind: 'noCurrentContext',
      contexts: '(it has: a, b)',
    });
    const k = openKubeconfig({ kubeconfig: kubeconfigFile('a') }, refusal);
    expect(await problemOf(() => k.requireClient('nowhere'))).toEqual({
      kind: 'unknownContext',
      context: 'nowhere',
      contexts: '(it has: a, b)',
    });
  });
});

describe('each front end words a missing context for its own flags', () => {
  it('kpromo (the CLI session): a ConfigError about `context`', async () => {
    const file = kubeconfigFile('a');
    const unknown = await refusedWith(() => openLocalApi({ kubeconfig: file, context: 'nowhere', clusterAccess: [] }));
    expect(unknown).toBeInstanceOf(ConfigError);
    expect((unknown as ConfigError).problems).toEqual([
      `context: the kubeconfig ${file} has no context "nowhere" (it has: a, b)`,
    ]);
    const none = await refusedWith(() => openLocalApi({ kubeconfig: kubeconfigFile(), clusterAccess: [] }));
    expect(none).toBeInstanceOf(ConfigError);
    expect((none as ConfigError).problems).toEqual(['context: the kubeconfig names no current context; pass one']);
  });

  it('kpromo adopt: an AdoptUsageError naming --context', async () => {
    const unknown = await refusedWith(() =>
      planAdoption({ kubeconfig: kubeconfigFile('a'), context: 'nowhere', owner: 'o', deliveryMethods }),
    );
    expect(unknown).toBeInstanceOf(AdoptUsageError);
    expect(unknown.message).toBe('the kubeconfig has no context "nowhere" (it has: a, b)');
    const none = await refusedWith(() => planAdoption({ kubeconfig: kubeconfigFile(), owner: 'o', deliveryMethods }));
    expect(none).toBeInstanceOf(AdoptUsageError);
    expect(none.message).toBe('the kubeconfig names no current context; pass --context');
  });

  it('kpromo doctor: a DoctorUsageError naming --context', async () => {
    const unknown = await refusedWith(() =>
      openDoctorContext({ kubeconfig: kubeconfigFile('a'), context: 'nowhere', deliveryMethods }),
    );
    expect(unknown).toBeInstanceOf(DoctorUsageError);
    expect(unknown.message).toBe('the kubeconfig has no context "nowhere" (it has: a, b); pass --context');
    const none = await refusedWith(() => openDoctorContext({ kubeconfig: kubeconfigFile(), deliveryMethods }));
    expect(none).toBeInstanceOf(DoctorUsageError);
    expect(none.message).toBe('the kubeconfig has no context "" (it has: a, b); pass --context');
  });
});

describe("the doctor's egress", () => {
  it("with --config, registries and issuers are reached under the controller config's egress.allowedCidrs; without, any address", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kpromo-session-')), 'controller-config.yaml');
    writeFileSync(file, 'egress: { allowedCidrs: [10.20.0.0/16] }\n');
    const judged = openDoctorContext({ kubeconfig: kubeconfigFile('a'), configFile: file, deliveryMethods });
    const open = openDoctorContext({ kubeconfig: kubeconfigFile('a'), deliveryMethods });
    try {
      expect(checkAddress(judged.egress.policy(), '10.20.1.2', 5000, 'registry.internal').allowed).toBe(true);
      expect(checkAddress(judged.egress.policy(), '10.30.1.2', 5000, 'registry.internal')).toMatchObject({
        allowed: false,
      });
      expect(checkAddress(judged.egress.policy(), '127.0.0.1', 5000, 'localhost').allowed).toBe(false);
      expect(checkAddress(open.egress.policy(), '10.30.1.2', 5000, 'registry.internal').allowed).toBe(true);
    } finally {
      await judged.close();
      await open.close();
    }
  });
});
