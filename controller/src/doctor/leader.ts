import type { DoctorCheck } from './check.js';

interface Lease {
  spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}

/** A controller holds the leader Lease and renews it. */
export const leaderCheck: DoctorCheck = {
  id: 'leader',
  title: 'Controller leader',
  async run({ control, lease, now }) {
    const l = lease ?? { namespace: 'default', name: 'kpromo-controller', durationSeconds: 15 };
    const subject = `Lease ${l.namespace}/${l.name}`;
    const fix = `is the controller running? kubectl -n ${l.namespace} get pods -l app.kubernetes.io/name=kpromo (and its logs); pass --config to read the Lease name from the controller config`;
    const got = await control.getOrUndefined<Lease>(
      `/apis/coordination.k8s.io/v1/namespaces/${l.namespace}/leases/${l.name}`,
    );
    if (!got?.spec?.holderIdentity)
      return [{ check: 'leader', status: 'fail', subject, message: 'no controller holds it', fix }];
    const renewed = got.spec.renewTime ? new Date(got.spec.renewTime).getTime() : 0;
    const ageS = Math.round((now().getTime() - renewed) / 1000);
    const limit = 2 * (got.spec.leaseDurationSeconds ?? l.durationSeconds);
    if (ageS > limit)
      return [
        {
          check: 'leader',
          status: 'fail',
          subject,
          message: `held by ${got.spec.holderIdentity} but not renewed for ${ageS}s`,
          fix,
        },
      ];
    return [
      {
        check: 'leader',
        status: 'pass',
        subject,
        message: `held by ${got.spec.holderIdentity}, renewed ${Math.max(ageS, 0)}s ago`,
      },
    ];
  },
};
