import { LEASE, resourcePath } from '../kube/paths.js';
import { ClientRateLimiter } from '../kube/rateLimit.js';
import { isConflict, isNotFound, KubeRest } from '../kube/rest.js';
import { metrics } from '../observability/metrics.js';

/**
 * Leader election's own client of the control cluster: its own connection pool and its own
 * client-side rate limit, so a renewal never waits behind promotion steps, status writes or (what a
 * stranger can cause) token reviews. Two requests per renew interval; the limit only stops a bug
 * from hammering the apiserver.
 */
export function leaderElectionClient(control: KubeRest): KubeRest {
  return new KubeRest(control.kc, control.clusterName, undefined, new ClientRateLimiter({ qps: 20, burst: 40 }));
}

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds?: number;
  renewIntervalMs?: number;
  /**
   * A leader that has not renewed for this long stops leading (and fails its fence) — strictly
   * before another replica may take the lease (lease duration after the last renew), as client-go's
   * renewDeadline. Default: two thirds of the lease duration.
   */
  renewDeadlineMs?: number;
  onStartedLeading?(signal: AbortSignal): void;
  onStoppedLeading?(): void;
  log?: { info(o: object, m: string): void; warn(o: object, m: string): void };
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

const microTime = (d: Date) => d.toISOString().replace('Z', '000Z');

/** Pure: may `identity` take the lease now? Free, ours, released, or expired (renewTime + duration passed). */
export function canAcquire(lease: Lease['spec'] | undefined, identity: string, now: Date): boolean {
  if (!lease?.holderIdentity) return true;
  if (lease.holderIdentity === identity) return true;
  const renew = lease.renewTime ?? lease.acquireTime;
  if (!renew) return true;
  return now.getTime() > new Date(renew).getTime() + (lease.leaseDurationSeconds ?? 15) * 1000;
}

/** A write was refused because this replica may no longer be leading (paused, partitioned, replaced). */
export class FencedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FencedError';
  }
}

/**
 * coordination.k8s.io/v1 Lease leader election (client-go semantics): create or take over an
 * expired lease with an optimistic-concurrency update, renew every renewInterval, step down when a
 * renew has not succeeded within the lease duration, and clear holderIdentity on release so a
 * standby takes over at once.
 */
export class LeaderElector {
  private leading = false;
  /** Acquire/renew attempts made (observability and tests). */
  attempts = 0;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  /** performance.now() of the last successful renew: monotonic, so a paused process sees the pause. */
  private lastRenew = 0;
  private leaderAbort?: AbortController;
  private readonly duration: number;
  private readonly renewMs: number;
  private readonly deadlineMs: number;

  constructor(
    private readonly rest: KubeRest,
    private readonly opts: LeaderElectionOptions,
  ) {
    this.duration = opts.leaseDurationSeconds ?? 15;
    this.renewMs = opts.renewIntervalMs ?? Math.max(500, (this.duration * 1000) / 3);
    this.deadlineMs = opts.renewDeadlineMs ?? (this.duration * 1000 * 2) / 3;
  }

  /**
   * Fencing: true only while leading with a renew younger than the renew deadline. Checked right
   * before every side effect, so a leader that was paused (SIGSTOP, GC, VM migration) past its
   * deadline writes nothing when it wakes up, even before its own timers have noticed.
   */
  holds(): boolean {
    return this.leading && performance.now() - this.lastRenew < this.deadlineMs;
  }

  /** Throws {@link FencedError} unless {@link holds}. */
  fence(): void {
    if (!this.holds())
      throw new FencedError(
        `${this.opts.identity} is not (or may no longer be) the leader of lease ${this.opts.namespace}/${this.opts.name}: last renew ${Math.round(performance.now() - this.lastRenew)} ms ago, deadline ${Math.round(this.deadlineMs)} ms`,
      );
  }

  get isLeader(): boolean {
    return this.leading;
  }
  get identity(): string {
    return this.opts.identity;
  }

  private path(name?: string) {
    return resourcePath(LEASE, this.opts.namespace, name);
  }

  /** One acquire/renew attempt. Returns whether we hold the lease afterwards. */
  async tryAcquireOrRenew(now = new Date()): Promise<boolean> {
    const id = this.opts.identity;
    const existing = await this.rest.getOrUndefined<Lease>(this.path(this.opts.name));
    if (!existing) {
      try {
        await this.rest.create(this.path(), {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.opts.name, namespace: this.opts.namespace },
          spec: {
            holderIdentity: id,
            leaseDurationSeconds: this.duration,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        });
        return true;
      } catch (e) {
        if (isConflict(e)) return false; // someone else created it first
        throw e;
      }
    }
    if (!canAcquire(existing.spec, id, now)) return false;
    const ours = existing.spec?.holderIdentity === id;
    const spec = {
      ...existing.spec,
      holderIdentity: id,
      leaseDurationSeconds: this.duration,
      renewTime: microTime(now),
      ...(ours ? {} : { acquireTime: microTime(now), leaseTransitions: (existing.spec?.leaseTransitions ?? 0) + 1 }),
    };
    try {
      await this.rest.put(this.path(this.opts.name), { ...existing, spec });
      return true;
    } catch (e) {
      if (isConflict(e) || isNotFound(e)) return false;
      throw e;
    }
  }

  start(): void {
    this.stopped = false;
    const tick = async () => {
      if (this.stopped) return;
      let ok: boolean | undefined;
      this.attempts++;
      // The renewTime we write is about now; count the deadline from before the request, so a slow
      // renew cannot stretch our belief past what other replicas see.
      const t0 = performance.now();
      const lease = `${this.opts.namespace}/${this.opts.name}`;
      try {
        ok = await this.tryAcquireOrRenew();
        metrics.leaseRenewals.inc({ lease, result: ok ? 'ok' : 'other' });
      } catch (e) {
        metrics.leaseRenewals.inc({ lease, result: 'failed' });
        // Transient apiserver trouble: keep leading until the lease could have expired.
        this.opts.log?.warn(
          { err: String(e), lease: `${this.opts.namespace}/${this.opts.name}` },
          'lease acquire/renew failed',
        );
      }
      if (this.stopped) return;
      if (ok) {
        this.lastRenew = t0;
        if (!this.leading) {
          this.leading = true;
          metrics.leaseRenewals.inc({ lease, result: 'started' });
          this.leaderAbort = new AbortController();
          this.opts.log?.info({ identity: this.opts.identity }, 'became leader');
          this.opts.onStartedLeading?.(this.leaderAbort.signal);
        }
      } else if (this.leading && (ok === false || performance.now() - this.lastRenew >= this.deadlineMs)) {
        this.stepDown(ok === false ? 'lease taken by another replica' : 'could not renew within the renew deadline');
      }
      // Woken up after a pause longer than the deadline: give up at once, before anything else runs.
      if (this.leading && !this.holds()) this.stepDown('renew deadline passed (process paused?)');
      this.timer = setTimeout(tick, this.leading ? this.renewMs : Math.max(250, this.renewMs));
    };
    void tick();
  }

  private stepDown(why: string) {
    if (!this.leading) return;
    this.leading = false;
    metrics.leaseRenewals.inc({ lease: `${this.opts.namespace}/${this.opts.name}`, result: 'stopped' });
    this.leaderAbort?.abort(new Error(why));
    this.opts.log?.warn({ identity: this.opts.identity, why }, 'stopped leading');
    this.opts.onStoppedLeading?.();
  }

  /** Stop campaigning; when leading, release the lease so another replica takes over immediately. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const wasLeading = this.leading;
    this.stepDown('shutdown');
    if (!wasLeading) return;
    try {
      const l = await this.rest.getOrUndefined<Lease>(this.path(this.opts.name));
      if (l?.spec?.holderIdentity === this.opts.identity) {
        await this.rest.put(this.path(this.opts.name), {
          ...l,
          spec: { ...l.spec, holderIdentity: null, leaseDurationSeconds: 1 },
        });
      }
    } catch (e) {
      this.opts.log?.warn(
        { err: String(e) },
        'lease release failed; another replica takes over after the lease duration',
      );
    }
  }
}
