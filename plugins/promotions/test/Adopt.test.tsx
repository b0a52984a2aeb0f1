// @vitest-environment jsdom
import type { AdoptionProposal, AdoptionRequest } from '@kpromo/plugin-promotions-react';
import { cleanup, fireEvent, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { AdoptPanel } from '../src/components/AdoptPanel';
import { fakeApi } from './fixtures';
import { renderWith } from './render';

afterEach(cleanup);

const yamlOf = (apps: string[]) =>
  apps
    .map((a) => `---\napiVersion: promotions.kpromo.dev/v1alpha1\nkind: Application\nmetadata:\n  name: ${a}\n`)
    .join('');

/** What the backend answers: both candidates always, the resources of the chosen ones. */
function proposal(req: AdoptionRequest): AdoptionProposal {
  const all = ['newsvc', 'reports'];
  const chosen = req.applications ?? all;
  return {
    namespace: req.namespace ?? 'shop',
    flow: req.flow ?? 'shop',
    scanned: [
      { environment: 'dev', namespace: 'shop-apps', workloads: 7 },
      { environment: 'prod', namespace: 'shop-apps', workloads: 6 },
    ],
    candidates: all.map((a) => ({
      application: a,
      owner: req.owner ?? 'unowned',
      repository: `shop/${a}`,
      workloads: [`Deployment/${a}`],
      chosen: chosen.includes(a),
      change: 'create' as const,
    })),
    resources: chosen.map((a) => ({
      kind: 'Application',
      name: a,
      change: 'create' as const,
      governed: false,
      fileName: `application-${a}.yaml`,
      yaml: yamlOf([a]),
    })),
    yaml: yamlOf(chosen),
    findings: [
      {
        level: 'undecided',
        subject: 'Deployment dev/cache',
        message: 'container main runs docker.io/library/redis: not adopted',
      },
    ],
    unchanged: ['Application/checkout'],
  };
}

describe('Onboarding (adopt)', () => {
  it('finds the candidates, lets the user choose, and shows the YAML of exactly the chosen ones', async () => {
    const requests: AdoptionRequest[] = [];
    const api = fakeApi({
      proposeAdoption: async (r) => {
        requests.push(r);
        return proposal(r);
      },
    });
    renderWith(<AdoptPanel />, { api, permission: 'allow' });
    fireEvent.change(await screen.findByLabelText(/Owning team/), { target: { value: 'team-a' } });
    fireEvent.click(screen.getByRole('button', { name: 'Find workloads' }));
    expect((await screen.findByTestId('adopt-candidates')).textContent).toContain(
      '2 application(s) to adopt in dev (7 workloads), prod (6 workloads)',
    );
    expect(screen.getByTestId('adopt-findings').textContent).toBe(
      'Undecided: Deployment dev/cache: container main runs docker.io/library/redis: not adopted',
    );
    // Both chosen at first; the user leaves out reports.
    fireEvent.click(screen.getByRole('checkbox', { name: /^reports/ }));
    fireEvent.click(screen.getByRole('button', { name: 'Review 1 application(s)' }));
    const review = await screen.findByTestId('adopt-review');
    expect(screen.getByLabelText('Proposed resources').textContent).toBe(yamlOf(['newsvc']));
    expect(review.textContent).toContain('Application newsvc (new)');
    expect(requests).toEqual([
      { namespace: 'shop', flow: 'shop', owner: 'team-a' },
      { namespace: 'shop', flow: 'shop', owner: 'team-a', applications: ['newsvc'] },
    ]);
    expect(screen.getByRole('link', { name: 'Download' }).getAttribute('href')).toBe(
      `data:application/yaml;charset=utf-8,${encodeURIComponent(yamlOf(['newsvc']))}`,
    );
  });

  it("says so when the user may not adopt, and shows the backend's refusal otherwise", async () => {
    renderWith(<AdoptPanel />, { api: fakeApi({ proposeAdoption: async (r) => proposal(r) }), permission: 'deny' });
    expect(await screen.findByText('Adoption is not open to you')).toBeTruthy();
    cleanup();
    renderWith(<AdoptPanel />, {
      api: fakeApi({
        proposeAdoption: async () => {
          throw new Error(
            'forbidden: user:default/alice may not create applications in namespace shop (Kubernetes RBAC) (HTTP 403)',
          );
        },
      }),
      permission: 'allow',
    });
    fireEvent.click(await screen.findByRole('button', { name: 'Find workloads' }));
    await waitFor(() => expect(screen.getByText(/may not create applications in namespace shop/)).toBeTruthy());
    expect(screen.queryByTestId('adopt-candidates')).toBeNull();
  });
});
