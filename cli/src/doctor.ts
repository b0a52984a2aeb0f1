import {
  builtinDeliveryMethods,
  type CheckResult,
  DOCTOR_CHECKS,
  DoctorUsageError,
  runDoctor,
} from '@kpromo/controller/doctor';
import { openDoctorContext } from '@kpromo/controller/session';
import { CliFailure, EXIT, UsageError } from './exitCodes.js';
import { printable } from './table.js';

export interface DoctorCliOptions {
  check?: string[];
  /** `namespace/name` of the controller's ServiceAccount, left out of the rbac check. */
  controllerServiceAccount?: string;
}

const MARK = { pass: 'PASS', warn: 'WARN', fail: 'FAIL' } as const;

/** One line per result, the fix indented under each failure and warning, then a summary. */
export function doctorText(results: CheckResult[]): string {
  const lines: string[] = [];
  for (const r of results) {
    lines.push(`${MARK[r.status]}  ${r.check.padEnd(12)} ${r.subject}: ${r.message}`);
    if (r.fix && r.status !== 'pass') lines.push(`      fix: ${r.fix}`);
  }
  const n = (s: CheckResult['status']) => results.filter((r) => r.status === s).length;
  lines.push(`${n('pass')} passed, ${n('warn')} warning(s), ${n('fail')} failed`);
  return `${lines.map((l) => printable(l)).join('\n')}\n`;
}

/**
 * `kpromo doctor`: checks the installation end to end as you (your kubeconfig, your RBAC) and
 * prints pass/warn/fail with the fix for each. With --config (the controller's config file) it
 * also checks every Environment against clusterAccess and finds the leader Lease.
 */
export async function doctorCommand(
  o: DoctorCliOptions,
  g: { kubeconfig?: string; context?: string; namespace?: string; config?: string },
): Promise<CheckResult[]> {
  const unknown = (o.check ?? []).filter((c) => !DOCTOR_CHECKS.has(c));
  if (unknown.length)
    throw new UsageError(`unknown check(s) ${unknown.join(', ')}; known: ${[...DOCTOR_CHECKS.keys()].join(', ')}`);
  let ctx: ReturnType<typeof openDoctorContext>;
  try {
    ctx = openDoctorContext({
      kubeconfig: g.kubeconfig,
      context: g.context,
      namespace: g.namespace,
      configFile: g.config,
      controllerServiceAccount: o.controllerServiceAccount,
      // The CLI loads no plugins: Environments delivering by a plugin's method are not checked here.
      deliveryMethods: builtinDeliveryMethods,
    });
  } catch (e) {
    if (e instanceof DoctorUsageError) throw new UsageError(e.message);
    throw e;
  }
  try {
    return await runDoctor(ctx, o.check);
  } finally {
    await ctx.close();
  }
}

/** Exit 1 when anything failed (warnings pass), for CI. */
export function requireHealthy(results: CheckResult[]): void {
  const failed = results.filter((r) => r.status === 'fail').length;
  if (failed) throw new CliFailure(EXIT.FAILURE, `${failed} check(s) failed`);
}
