import type { PromotionPlan } from '@kpromo/api';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { KubeRest } from '../src/kube/rest.js';
import { groupCommit } from '../src/reconcile/plan/groupCommit.js';
import { PlanJournal } from '../src/reconcile/plan/journal.js';

/** A promise with its resolver, to hold a flush or an app's "side effect" open. */
function gate() {
  let open!: () => void;
  const p = new Promise<void>((r) => {
    open = r;
  });
  return { p, open };
}

describe('groupCommit with a linger (plan status writes shared by apps)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('waits for every active worker to save, then flushes once with all their changes', async () => {
    let value = 0;
    const flushed: number[] = [];
    const save = groupCommit(
      async () => {
        flushed.push(value);
      },
      { lingerMs: 1000, complete: (blocked) => blocked >= 3 },
    );
    value = 1;
    const a = save();
    value = 2;
    await vi.advanceTimersByTimeAsync(10);
    const b = save();
    expect(flushed).toEqual([]); // two of three workers wait
    value = 3;
    await vi.advanceTimersByTimeAsync(10);
    const c = save();
    await Promise.all([a, b, c]);
    expect(flushed).toEqual([3]);
  });

  it('flushes after lingerMs when a worker does not save (the wait is bounded)', async () => {
    const flushed: number[] = [];
    const save = groupCommit(
      async () => {
        flushed.push(flushed.length);
      },
      { lingerMs: 250, complete: (blocked) => blocked >= 2 },
    );
    let done = false;
    void save().then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(249);
    expect(flushed).toEqual([]);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(flushed).toEqual([0]);
    expect(done).toBe(true);
  });

  it('poke: a worker that leaves without saving releases the others at once', async () => {
    let active = 2;
    const flushed: string[] = [];
    const save = groupCommit(
      async () => {
        flushed.push('x');
      },
      { lingerMs: 10_000, complete: (blocked) => blocked >= active },
    );
    const a = save();
    await vi.advanceTimersByTimeAsync(1);
    expect(flushed).toEqual([]);
    active = 1;
    save.poke();
    await a;
    expect(flushed).toEqual(['x']);
  });

  it('callers blocked on the running flush count as waiting: the next batch follows it without lingering', async () => {
    const hold = gate();
    let value = 0;
    const flushed: number[] = [];
    let calls = 0;
    const save = groupCommit(
      async () => {
        const v = value;
        if (calls++ === 0) await hold.p;
        flushed.push(v);
      },
      { lingerMs: 10_000, complete: (blocked) => blocked >= 2 },
    );
    value = 1;
    const a = save();
    value = 2;
    const first = save(); // both workers saved: the first flush starts and is held open
    await vi.advanceTimersByTimeAsync(1);
    value = 3;
    let bDone = false;
    const b = save().then(() => {
      bDone = true;
    });
    hold.open();
    await Promise.all([a, first]);
    await vi.advanceTimersByTimeAsync(1); // far below the 10 s linger
    expect(bDone).toBe(true);
    await b;
    expect(flushed).toEqual([2, 3]);
  });

  it('a failed flush rejects only the callers that joined it', async () => {
    let fail = true;
    const save = groupCommit(
      async () => {
        const f = fail;
        fail = false;
        if (f) throw new Error('conflict');
      },
      { lingerMs: 100, complete: () => true },
    );
    const a = save();
    await expect(a).rejects.toThrow('conflict');
    await expect(save()).resolves.toBeUndefined();
  });
});

describe('PlanJournal: apps at work share status writes, each step still stored before it resolves', () => {
  it('two apps whose steps interleave: every save resolves after a PUT holding its change, in fewer PUTs than saves', async () => {
    const puts: Array<Record<string, string>> = [];
    const rest = {
      put: async (_path: string, body: PromotionPlan) => {
        puts.push(Object.fromEntries((body.status?.apps ?? []).map((a) => [a.application, a.phase])));
        return structuredClone(body);
      },
    } as unknown as KubeRest;
    const plan: PromotionPlan = {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'PromotionPlan',
      metadata: { name: 'p', namespace: 'ns', generation: 1, uid: 'u' },
      spec: { flow: 'f', from: 'dev', to: 'stable', candidates: [] },
      status: {
        apps: [
          { application: 'a', phase: 'Pending' },
          { application: 'b', phase: 'Pending' },
        ],
      },
    };
    const j = new PlanJournal(rest, plan, () => new Date(0), undefined, 60_000);
    const stored: string[] = [];
    /** Each app stores a phase, then "does its side effect" (a short wait), three times. */
    const app = (name: 'a' | 'b', waits: number[]) =>
      j.working(async () => {
        const ap = j.status.apps!.find((x) => x.application === name)!;
        for (const [i, phase] of (['Copying', 'Writing', 'RollingOut'] as const).entries()) {
          ap.phase = phase;
          await j.save();
          // The save resolved: a PUT already holds this phase.
          expect(puts.some((p) => p[name] === phase)).toBe(true);
          stored.push(`${name}=${phase}`);
          await new Promise((r) => setTimeout(r, waits[i]));
        }
      });
    await Promise.all([app('a', [1, 30, 1]), app('b', [20, 1, 1])]);
    expect(stored).toHaveLength(6);
    // The last step of each app is stored (the last PUT has both apps RollingOut).
    expect(puts.at(-1)).toEqual({ a: 'RollingOut', b: 'RollingOut' });
    // Without sharing, 6 saves are 6 PUTs; a save waits for the other app at work (not the 60 s linger).
    expect(puts.length).toBeLessThan(6);
  });
});
