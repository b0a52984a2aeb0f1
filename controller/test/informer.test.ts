import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Informer, type InformerEvent, type KObject } from '../src/kube/informer.js';
import { KubeRest } from '../src/kube/rest.js';

interface Obj extends KObject {
  data?: Record<string, string>;
}
const PATH = '/api/v1/namespaces/ns/configmaps';

/**
 * A tiny apiserver for one collection: paged lists, watches from a resourceVersion (replaying the
 * history after it, 410 below `compactedBelow`), bookmarks on demand, and request bookkeeping.
 */
class FakeApi {
  rv = 100;
  readonly objects = new Map<string, Obj>();
  readonly history: Array<{ rv: number; type: string; obj: Obj }> = [];
  compactedBelow = 0;
  /** Answer watches with this HTTP status instead (then clear it). */
  failNextWatch?: number;
  readonly watchers = new Set<ServerResponse>();
  readonly lists: URLSearchParams[] = [];
  readonly watches: URLSearchParams[] = [];
  private server?: Server;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== PATH) return void res.writeHead(404).end();
      const q = url.searchParams;
      if (q.get('watch') !== 'true') {
        this.lists.push(q);
        const items = [...this.objects.values()];
        const limit = Number(q.get('limit') ?? 1e9);
        const from = Number(q.get('continue') ?? 0);
        const page = items.slice(from, from + limit);
        const more = from + limit < items.length;
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(
          JSON.stringify({
            kind: 'ConfigMapList',
            apiVersion: 'v1',
            metadata: { resourceVersion: String(this.rv), ...(more ? { continue: String(from + limit) } : {}) },
            // Like the apiserver: items of a built-in list carry no kind/apiVersion.
            items: page.map(({ kind: _k, apiVersion: _a, ...o }) => o),
          }),
        );
      }
      this.watches.push(q);
      if (this.failNextWatch) {
        const code = this.failNextWatch;
        this.failNextWatch = undefined;
        res.writeHead(code, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ kind: 'Status', code, reason: 'InternalError', message: 'boom' }));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      const from = Number(q.get('resourceVersion') || 0);
      if (from < this.compactedBelow) {
        this.send(res, 'ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
        return void res.end();
      }
      for (const e of this.history) if (e.rv > from) this.send(res, e.type, e.obj);
      this.watchers.add(res);
      res.on('close', () => this.watchers.delete(res));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  private send(res: ServerResponse, type: string, object: unknown) {
    res.write(`${JSON.stringify({ type, object })}\n`);
  }

  change(type: 'ADDED' | 'MODIFIED' | 'DELETED', name: string, data: Record<string, string> = {}) {
    this.rv++;
    const obj: Obj = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'ns', resourceVersion: String(this.rv) },
      data,
    };
    if (type === 'DELETED') this.objects.delete(name);
    else this.objects.set(name, obj);
    this.history.push({ rv: this.rv, type, obj });
    for (const w of this.watchers) this.send(w, type, obj);
  }

  bookmark(rv = ++this.rv) {
    for (const w of this.watchers)
      this.send(w, 'BOOKMARK', { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(rv) } });
  }
  /** Ends every open watch, as the apiserver does when timeoutSeconds elapse. */
  closeWatches() {
    for (const w of this.watchers) w.end();
    this.watchers.clear();
  }
  async stop() {
    for (const w of this.watchers) w.destroy();
    await new Promise((r) => this.server?.close(r));
  }
}

function restFor(server: string): KubeRest {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'u' }],
    currentContext: 'fake',
  });
  return new KubeRest(kc, 'fake');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits for `fn` on real time (performance.now and setTimeout), also while a test fakes Date. */
async function until(what: string, fn: () => boolean, ms = 5_000) {
  const end = performance.now() + ms;
  while (!fn()) {
    if (performance.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(20);
  }
}

/**
 * The inactivity check (a setInterval comparing Date.now() with the last byte's time) on a fake
 * clock that the test moves: I/O stays real, so a busy machine delays when bytes arrive but not
 * what the check sees between them.
 */
const fakeInactivityClock = () => vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });

let api: FakeApi;
let inf: Informer<Obj> | undefined;
afterEach(async () => {
  vi.useRealTimers();
  inf?.stop();
  inf = undefined;
  await api?.stop();
});

async function setup(opts: ConstructorParameters<typeof Informer<Obj>>[3] = {}) {
  api = new FakeApi();
  const server = await api.start();
  api.change('ADDED', 'a');
  api.change('ADDED', 'b');
  const events: Array<[InformerEvent, string]> = [];
  inf = new Informer<Obj>(restFor(server), PATH, undefined, { maxBackoffMs: 200, ...opts });
  inf.on((t, o) => events.push([t, o.metadata.name]));
  inf.start();
  await inf.waitForSync();
  await until('watch open', () => api.watchers.size === 1);
  return { events, inf };
}

describe('Informer watch lifecycle', () => {
  it('lists once, then keeps one long watch open (server timeout 5-10 min, bookmarks) while only bookmarks arrive', async () => {
    fakeInactivityClock();
    const { events, inf } = await setup({ inactivityMs: 1_000 });
    // A bookmark every 100 ms for 3x the inactivity limit, each one received before the clock moves on.
    for (let i = 1; i <= 30; i++) {
      api.bookmark();
      await until(`bookmark ${i}`, () => inf.stats.bookmarks === i);
      vi.advanceTimersByTime(100);
    }
    expect(api.lists).toHaveLength(1);
    expect(api.watches).toHaveLength(1);
    expect(inf.stats.bookmarks).toBe(30);
    const q = api.watches[0];
    expect(q.get('allowWatchBookmarks')).toBe('true');
    expect(q.get('resourceVersion')).toBe('102');
    expect(Number(q.get('timeoutSeconds'))).toBeGreaterThanOrEqual(300);
    expect(Number(q.get('timeoutSeconds'))).toBeLessThanOrEqual(600);
    expect(events).toEqual([
      ['add', 'a'],
      ['add', 'b'],
    ]);
    // List items get the kind the list names, like watched objects.
    expect(inf.get('ns', 'a')?.kind).toBe('ConfigMap');
    api.change('MODIFIED', 'a', { x: '1' });
    await until('update', () => events.length === 3);
    expect(events[2]).toEqual(['update', 'a']);
    expect(inf.get('ns', 'a')?.data).toEqual({ x: '1' });
  });

  it('pages the list', async () => {
    api = new FakeApi();
    const server = await api.start();
    for (let i = 0; i < 7; i++) api.change('ADDED', `o${i}`);
    inf = new Informer<Obj>(restFor(server), PATH, undefined, { pageSize: 3 });
    inf.start();
    await inf.waitForSync();
    expect(api.lists.map((q) => q.get('continue'))).toEqual([null, '3', '6']);
    expect(inf.size).toBe(7);
  });

  it('resumes from the last resourceVersion (moved by a bookmark) without relisting when the server ends the watch', async () => {
    const { events, inf } = await setup();
    api.change('ADDED', 'c');
    await until('add c', () => events.length === 3);
    api.bookmark(150);
    await until('bookmark', () => inf.stats.bookmarks === 1);
    api.closeWatches();
    await until('second watch', () => api.watches.length === 2 && api.watchers.size === 1);
    expect(api.watches[1].get('resourceVersion')).toBe('150');
    expect(api.lists).toHaveLength(1);
    api.change('DELETED', 'a');
    await until('delete a', () => events.length === 4);
    expect(events[3]).toEqual(['delete', 'a']);
  });

  it('reopens a watch that went silent past the inactivity limit, from its resourceVersion', async () => {
    fakeInactivityClock();
    const { events } = await setup({ inactivityMs: 300 });
    api.change('ADDED', 'c');
    await until('add c', () => events.length === 3);
    // Silent from here: once the limit has passed on the clock, the next check reopens the watch.
    vi.advanceTimersByTime(350);
    await until('reopened', () => api.watches.length >= 2);
    expect(api.watches[1].get('resourceVersion')).toBe('103');
    expect(api.lists).toHaveLength(1);
    expect(inf?.lastError).toBeUndefined();
  });

  it('relists on 410 Gone, reports what was deleted meanwhile, and delivers later events', async () => {
    const { events, inf } = await setup();
    // While disconnected: b deleted, c added, and the history compacted past our resourceVersion.
    api.closeWatches();
    api.compactedBelow = 1_000;
    api.rv = 999;
    api.change('DELETED', 'b');
    api.change('ADDED', 'c');
    await until('relisted', () => api.lists.length === 2);
    await until('watch open again', () => api.watchers.size === 1);
    expect(inf.stats.relistsAfterGone).toBeGreaterThanOrEqual(1);
    expect(events.slice(2)).toEqual(
      expect.arrayContaining([
        ['add', 'c'],
        ['delete', 'b'],
      ]),
    );
    api.change('MODIFIED', 'c', { later: 'yes' });
    await until('later event', () => events.some(([t, n]) => t === 'update' && n === 'c'));
    expect(inf.get('ns', 'c')?.data).toEqual({ later: 'yes' });
    expect(inf.get('ns', 'b')).toBeUndefined();
  });

  it('backs off, relists and clears the error after an HTTP error on the watch', async () => {
    const { inf } = await setup();
    const states: Array<string | undefined> = [];
    inf.onState(() => states.push(inf.lastError));
    api.failNextWatch = 500;
    api.closeWatches();
    await until('recovered', () => api.watchers.size === 1 && api.lists.length === 2);
    expect(states[0]).toMatch(/500 InternalError/);
    expect(states.at(-1)).toBeUndefined();
    expect(inf.lastError).toBeUndefined();
  });

  it('does not reconnect in a tight loop when watches end at once', async () => {
    const { inf } = await setup({ maxBackoffMs: 400 });
    // Every watch now ends immediately without events.
    const before = api.watches.length;
    const timer = setInterval(() => api.closeWatches(), 5);
    await sleep(1_500);
    clearInterval(timer);
    // Without backoff this would be hundreds. (No check of the elapsed time: that would test the
    // test's own sleep, and a timer may fire a millisecond before Date.now() says it is due.)
    expect(api.watches.length - before).toBeLessThan(15);
    expect(inf.stats.lists).toBe(1);
  });

  it('stop() closes the watch and sends nothing more', async () => {
    const { inf } = await setup();
    inf.stop();
    await until('closed', () => api.watchers.size === 0);
    const n = api.watches.length + api.lists.length;
    await sleep(300);
    expect(api.watches.length + api.lists.length).toBe(n);
  });

  it('transforms each object once and hands handlers the stored copy', async () => {
    api = new FakeApi();
    const server = await api.start();
    api.change('ADDED', 'a', { big: 'x'.repeat(100) });
    const seen: Obj[] = [];
    inf = new Informer<Obj>(restFor(server), PATH, undefined, {
      transform: (o) => ({ kind: o.kind, metadata: o.metadata }),
    });
    inf.on((_, o) => seen.push(o));
    inf.start();
    await inf.waitForSync();
    await until('watch open', () => api.watchers.size === 1);
    api.change('MODIFIED', 'a', { big: 'y' });
    await until('update', () => seen.length === 2);
    expect(seen.every((o) => o.data === undefined)).toBe(true);
    expect(seen[1]).toBe(inf.get('ns', 'a'));
  });
});
