// The target cluster's kube-apiserver is killed and restarted while a plan writes to it: the plan
// ends Complete with no second copy and no lost status entry. Every integration file uses that
// apiserver, so this file runs alone (test/integrationGroups.ts); the other faults are in
// faults.int.test.ts.
import { restartComponent, waitFor } from '@kpromo/test-harness';
import { getPlan } from '@kpromo/test-harness/controller';
import { describe, it } from 'vitest';
import { faultInjection } from './support/faultInjection.js';

const { dev, scenario, controller, expectClean } = faultInjection();

describe('fault injection', () => {
  it('the target cluster apiserver restarts mid-plan', async () => {
    const s = await scenario('apiserver');
    controller(s.ns, 'ctl-1');
    const [plan] = await s.approvePlans('p', [s.apps]);
    const t0 = Date.now();
    await waitFor(
      'an app written',
      async () => (await getPlan(dev, s.ns, plan)).status?.apps?.some((x) => x.written) || undefined,
      60_000,
      20,
    );
    await restartComponent('stable/kube-apiserver', { kill: true });
    expectClean('apiserver', await s.outcome([plan], t0));
  });
});
