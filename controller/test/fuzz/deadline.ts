import { Worker } from 'node:worker_threads';

/**
 * A worker (TypeScript through tsx) answering one request at a time. A request that takes longer
 * than `deadlineMs` ends the worker (a new one starts for the next request) and rejects with
 * "blocked for more than …": how the fuzz suite reports a hang instead of hanging itself.
 */
export class DeadlineWorker<Req extends object, Res> {
  private worker?: Worker;
  private next = 0;

  constructor(
    private readonly file: URL,
    private readonly deadlineMs: number,
  ) {}

  private start(): Worker {
    this.worker ??= new Worker(this.file, { execArgv: ['--import', 'tsx'] });
    return this.worker;
  }

  call(req: Req, deadlineMs = this.deadlineMs): Promise<Res> {
    const w = this.start();
    const id = ++this.next;
    return new Promise<Res>((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        this.worker = undefined;
        void w.terminate();
        reject(new Error(`blocked for more than ${deadlineMs} ms on ${JSON.stringify(req)}`));
      }, deadlineMs);
      const onMessage = (m: { id: number } & Res) => {
        if (m.id !== id) return;
        cleanup();
        resolve(m);
      };
      const onError = (e: Error) => {
        cleanup();
        this.worker = undefined;
        reject(e);
      };
      const cleanup = () => {
        clearTimeout(timer);
        w.off('message', onMessage);
        w.off('error', onError);
      };
      w.on('message', onMessage);
      w.on('error', onError);
      w.postMessage({ ...req, id });
    });
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
    this.worker = undefined;
  }
}
