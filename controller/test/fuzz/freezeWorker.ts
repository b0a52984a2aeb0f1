// Runs evaluateFreeze in a worker thread, so the fuzz test can give up on a call that blocks (a
// synchronous loop cannot be interrupted in the test's own thread) and report the input.
import { parentPort } from 'node:worker_threads';
import { evaluateFreeze, type SourcedWindow, threadCpuMs } from '../../src/policy/freezeWindows.js';

parentPort?.on('message', (m: { id: number; windows: SourcedWindow[]; now: number }) => {
  try {
    const cpuBefore = threadCpuMs();
    const v = evaluateFreeze(m.windows, new Date(m.now));
    // The CPU time the evaluation cost, which the tests bound: unlike wall time it does not grow when
    // other work shares the cores.
    const cpuMs = threadCpuMs() - cpuBefore;
    parentPort?.postMessage({ id: m.id, ok: true, cpuMs, verdict: { ...v, until: v.until?.getTime() } });
  } catch (e) {
    parentPort?.postMessage({ id: m.id, ok: false, name: (e as Error)?.name, message: (e as Error)?.message });
  }
});
