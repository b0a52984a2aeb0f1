import type { CheckResult, DoctorCheck } from './check.js';

/** Skew at which soak times, freeze windows and token lifetimes start to be visibly off. */
export const CLOCK_WARN_MS = 5_000;
export const CLOCK_FAIL_MS = 60_000;

/**
 * Pure: how far the local clock is from the apiserver's. The server's Date has one-second
 * resolution and was stamped somewhere between sending and receiving, so only the part of the
 * difference outside that window (plus the second) counts.
 */
export function clockSkewMs(server: Date, sentAt: Date, receivedAt: Date): number {
  const lo = sentAt.getTime() - 1000;
  const hi = receivedAt.getTime() + 1000;
  const t = server.getTime();
  return t < lo ? t - lo : t > hi ? t - hi : 0;
}

/** Pure: the verdict on a measured skew. */
export function clockResult(subject: string, skewMs: number): CheckResult {
  const s = Math.round(Math.abs(skewMs) / 1000);
  const side = skewMs < 0 ? 'behind' : 'ahead of';
  const message =
    skewMs === 0 ? 'this machine and the apiserver agree (within 1 s)' : `the apiserver is ${s}s ${side} this machine`;
  if (Math.abs(skewMs) >= CLOCK_FAIL_MS)
    return {
      check: 'clock',
      status: 'fail',
      subject,
      message: `${message}: soak times, freeze windows and token lifetimes are off by as much`,
      fix: 'run NTP (chrony, systemd-timesyncd) on the nodes and on this machine',
    };
  if (Math.abs(skewMs) >= CLOCK_WARN_MS)
    return {
      check: 'clock',
      status: 'warn',
      subject,
      message,
      fix: 'run NTP (chrony, systemd-timesyncd) on the nodes and on this machine',
    };
  return { check: 'clock', status: 'pass', subject, message };
}

/** This machine's clock against the control cluster's apiserver. */
export const clockCheck: DoctorCheck = {
  id: 'clock',
  title: 'Clock skew',
  async run({ control }) {
    const subject = `apiserver of ${control.clusterName}`;
    const c = await control.serverClock();
    if (!c)
      return [{ check: 'clock', status: 'warn', subject, message: 'the apiserver sent no Date header; not measured' }];
    return [clockResult(subject, clockSkewMs(c.server, c.sentAt, c.receivedAt))];
  },
};
