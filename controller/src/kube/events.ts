import { randomBytes } from 'node:crypto';
import { EVENT, resourcePath } from './paths.js';
import type { KubeRest } from './rest.js';

export interface EventTarget {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/** Records core/v1 Events on kpromo objects (best effort: a failed Event never fails a reconcile). */
export class EventRecorder {
  constructor(
    private readonly rest: KubeRest,
    private readonly component = 'kpromo-controller',
    private readonly onError?: (e: unknown) => void,
    /** This replica (reportingInstance), so an Event says which controller of several acted. */
    private readonly instance?: string,
  ) {}

  async record(obj: EventTarget, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const ns = obj.metadata.namespace ?? 'default';
    const now = new Date().toISOString();
    try {
      await this.rest.create(resourcePath(EVENT, ns), {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${obj.metadata.name}.${randomBytes(6).toString('hex')}`, namespace: ns },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.metadata.name,
          namespace: ns,
          uid: obj.metadata.uid,
        },
        reason,
        message: message.slice(0, 1024),
        type,
        source: { component: this.component },
        reportingComponent: this.component,
        ...(this.instance ? { reportingInstance: this.instance.slice(0, 128) } : {}),
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      });
    } catch (e) {
      this.onError?.(e);
    }
  }
}
