import { type Registry, registryOf } from '../extension/registry.js';
import { admissionCheck } from './admission.js';
import { type CheckResult, type DoctorCheck, type DoctorContext, why } from './check.js';
import { clockCheck } from './clock.js';
import { controllerViewCheck } from './controllerView.js';
import { crdsCheck } from './crds.js';
import { deliveryCheck } from './delivery.js';
import { environmentsCheck, registriesCheck } from './environments.js';
import { leaderCheck } from './leader.js';
import { mcpCheck } from './mcp.js';
import { rbacWildcardCheck } from './rbacWildcards.js';

/** The checks by id, in the order they are printed; adding one means adding it here. */
export const DOCTOR_CHECKS: Registry<DoctorCheck> = registryOf(
  'doctor check',
  [
    crdsCheck,
    admissionCheck,
    rbacWildcardCheck,
    environmentsCheck,
    controllerViewCheck,
    registriesCheck,
    deliveryCheck,
    leaderCheck,
    mcpCheck,
    clockCheck,
  ],
  (c) => c.id,
);

/**
 * Runs every check (or those named). A check that cannot run at all (forbidden, cluster down) is a
 * failure of that check with the reason, never an exception: the report is always complete.
 */
export async function runDoctor(ctx: DoctorContext, only?: readonly string[]): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  for (const c of DOCTOR_CHECKS.values()) {
    if (only?.length && !only.includes(c.id)) continue;
    try {
      out.push(...(await c.run(ctx)));
    } catch (e) {
      out.push({
        check: c.id,
        status: 'fail',
        subject: c.title,
        message: `could not check: ${why(e)}`,
        fix: 'run kpromo doctor as a user who may read kpromo resources, CRDs and admission policies (the chart role kpromo-viewer plus cluster read)',
      });
    }
  }
  return out;
}
