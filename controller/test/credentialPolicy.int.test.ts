/**
 * Secrets leave the controller only where their owner said (issue 31, point 3). A Notification's
 * author chooses the URL; only the Secret's owner chooses where its values may go: label
 * promotions.kpromo.dev/credential=true and annotation promotions.kpromo.dev/destinations.
 *
 * Real controller (its notifier, cache and status writer), real apiserver (Secrets, Notifications,
 * statuses), real HTTP receivers on loopback. Only the release event is handed to the controller's
 * notify hook directly instead of running a plan (notifyProviders.int.test.ts runs plans).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Notification } from '@kpromo/api';
import { applyCrds, kubeConfigFor, waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  controllerConfig,
  deleteNamespaces,
  restFor,
  runNamespaces,
  setupNamespaces,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import { verifyWebhookSignature } from '../src/notify/signWebhook.js';
import { createLogger } from '../src/observability/logger.js';
import type { PlanEvent } from '../src/reconcile/plan/index.js';
import { type Running, startController } from '../src/runtime.js';

const names = runNamespaces('ctl-cpol');
const { ns: NS } = names;
const kubeconfig = inject('kubeconfig');
const dev = restFor(kubeconfig, 'dev');
const DB_PASSWORD = 'db-password-never-leaves';
const API_KEY = 'receiver-a-api-key';
const HMAC = 'receiver-a-hmac-key';
const LABEL = { 'promotions.kpromo.dev/credential': 'true' };

interface Receiver {
  server: Server;
  url: string;
  calls: Array<{ headers: IncomingHttpHeaders; body: string }>;
}

async function receiver(): Promise<Receiver> {
  const calls: Receiver['calls'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      calls.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, calls, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let A: Receiver;
let B: Receiver;
let ctl: Running;
let emit: ((e: PlanEvent) => void) | undefined;
const logLines: string[] = [];

const secret = (
  name: string,
  data: Record<string, string>,
  meta: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
) =>
  dev.apply(
    `/api/v1/namespaces/${NS}/secrets/${name}`,
    { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: NS, ...meta }, stringData: data },
    'ctl-test',
  );
const notification = (name: string, webhook: object) =>
  // Each Notification listens to the flow named like it: one event reaches one Notification.
  applyCr(dev, {
    kind: 'Notification',
    metadata: { name, namespace: NS },
    spec: { events: ['PlanApproved'], flows: [name], webhook },
  });
const getNotification = (name: string) => dev.get<Notification>(resourcePath(KPROMO_TYPES.Notification, NS, name));

/** One PlanApproved event of flow `name` (for Notification `name` only); resolves with its status once it counted it. */
async function approveAndRead(name: string, plan: string): Promise<Notification> {
  const before = await getNotification(name);
  const count = (n: Notification) => (n.status?.delivered ?? 0) + (n.status?.failed ?? 0);
  emit!({
    type: 'PlanApproved',
    namespace: NS,
    plan,
    flow: name,
    from: 'dev',
    to: 'prod',
    time: new Date().toISOString(),
  } as PlanEvent);
  return waitFor(`status of ${name}`, async () => {
    const n = await getNotification(name);
    return count(n) > count(before) ? n : undefined;
  });
}

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await setupNamespaces(dev, [], names);
  [A, B] = await Promise.all([receiver(), receiver()]);

  // Not a credential for kpromo: an application's database password.
  await secret('db-credentials', { password: DB_PASSWORD, username: 'app' });
  // Credentials whose owner allows receiver A only.
  await secret(
    'receiver-a-headers',
    { 'x-api-key': API_KEY },
    { labels: LABEL, annotations: { 'promotions.kpromo.dev/destinations': `${A.url}/` } },
  );
  await secret(
    'receiver-a-hmac',
    { secret: HMAC },
    { labels: LABEL, annotations: { 'promotions.kpromo.dev/destinations': `${A.url}/hooks/` } },
  );

  await notification('steal-headers', { url: `${B.url}/collect`, headersSecretRef: { name: 'db-credentials' } });
  await notification('steal-hmac', {
    url: `${B.url}/oracle`,
    secretRef: { name: 'db-credentials', key: 'password' },
  });
  await notification('redirect-headers', { url: `${B.url}/collect`, headersSecretRef: { name: 'receiver-a-headers' } });
  await notification('happy', {
    url: `${A.url}/hooks/kpromo`,
    headersSecretRef: { name: 'receiver-a-headers' },
    secretRef: { name: 'receiver-a-hmac' },
  });

  const log = createLogger({
    level: 'debug',
    destination: { write: (line: string) => void logLines.push(line) },
  });
  ctl = await startController(
    controllerConfig(kubeconfig, NS, {
      leaderElection: { enabled: false },
      egress: { allowedCidrs: ['127.0.0.1/32'] },
    }),
    {
      log,
      customize: (o) => {
        emit = o.notify;
        return o;
      },
    },
  );
  await waitFor('four Notifications in the cache', async () => ctl.controller.cache.notifications(NS).length === 4);
});

afterAll(async () => {
  await ctl?.stop();
  for (const r of [A, B]) await new Promise((resolve) => r?.server.close(resolve));
  await deleteNamespaces(dev, [], names);
});

describe('a Notification sends a Secret only where the Secret says', () => {
  it('sends nothing of a Secret that did not opt in as headers, and says why in the status', async () => {
    const n = await approveAndRead('steal-headers', 'p1');
    expect(B.calls).toEqual([]);
    expect(n.status?.delivered).toBeUndefined();
    expect(n.status?.failed).toBe(1);
    expect(n.status?.lastError).toBe(
      `Secret ${NS}/db-credentials (spec.webhook.headersSecretRef of Notification ${NS}/steal-headers) is not marked as a credential kpromo may send: its owner must label it promotions.kpromo.dev/credential=true and list where it may go in annotation promotions.kpromo.dev/destinations (e.g. "${B.url}/")`,
    );
    expect(n.status?.lastError).not.toContain(DB_PASSWORD);
    expect(logLines.join('')).not.toContain(DB_PASSWORD);
  });

  it('does not sign with a Secret that did not opt in (no HMAC oracle)', async () => {
    const n = await approveAndRead('steal-hmac', 'p2');
    expect(B.calls).toEqual([]);
    expect(n.status?.failed).toBe(1);
    expect(n.status?.lastError).toContain(
      `Secret ${NS}/db-credentials (spec.webhook.secretRef of Notification ${NS}/steal-hmac) is not marked as a credential kpromo may send`,
    );
  });

  it('does not send an opted-in Secret to a host its destinations do not name', async () => {
    const n = await approveAndRead('redirect-headers', 'p3');
    expect(B.calls).toEqual([]);
    expect(n.status?.failed).toBe(1);
    expect(n.status?.lastError).toBe(
      `Secret ${NS}/receiver-a-headers (spec.webhook.headersSecretRef of Notification ${NS}/redirect-headers) may be sent only to ${A.url}/, not to ${B.url} (spec.webhook.url); if it should go there, its owner adds "${B.url}/" to annotation promotions.kpromo.dev/destinations`,
    );
    expect(logLines.join('')).not.toContain(API_KEY);
  });

  it('delivers with the headers and signature of Secrets that name the receiver', async () => {
    const n = await approveAndRead('happy', 'p4');
    expect(n.status).toMatchObject({ delivered: 1 });
    expect(n.status?.lastError).toBeUndefined();
    expect(A.calls).toHaveLength(1);
    const [call] = A.calls;
    expect(call.headers['x-api-key']).toBe(API_KEY);
    expect(
      verifyWebhookSignature(
        HMAC,
        String(call.headers['x-kpromo-timestamp']),
        call.body,
        String(call.headers['x-kpromo-signature']),
      ),
    ).toBe(true);
    // Nothing ever reached B, whatever the other Notifications asked for.
    expect(B.calls).toEqual([]);
  });
});
