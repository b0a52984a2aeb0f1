import type { Environment, PromotionFlow } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { adoptIntoFlow } from '../../src/adopt/intoFlow.js';
import { type FoundEnvironment, proposeAdoption } from '../../src/adopt/propose.js';
import { builtinDeliveryMethods } from '../../src/delivery/registry.js';

const API = 'promotions.kpromo.dev/v1alpha1';
const found = (name: string, prefix: string, apps: string[]): FoundEnvironment => ({
  name,
  context: name,
  namespace: 'shop',
  registry: { host: 'reg.example.com', ...(prefix ? { prefix } : {}) },
  workloads: apps.map((a) => ({
    kind: 'Deployment' as const,
    name: a,
    labels: { team: 'team-a' },
    containers: [{ name: 'main', image: `reg.example.com/${prefix ? `${prefix}/` : ''}${a}:v1` }],
  })),
  helmReleases: [],
  kustomizations: [],
  imagePolicies: [],
});
const environment = (name: string, prefix: string, method: 'patch' | 'helmRelease' = 'patch') =>
  ({
    apiVersion: API,
    kind: 'Environment',
    metadata: { name, namespace: 'n' },
    spec: {
      cluster: { context: name },
      namespace: 'shop',
      registry: { host: 'reg.example.com', ...(prefix ? { prefix } : {}) },
      delivery: { method },
    },
  }) as Environment;
const flow = (selector?: PromotionFlow['spec']['selector']) =>
  ({
    apiVersion: API,
    kind: 'PromotionFlow',
    metadata: { name: 'main', namespace: 'n' },
    spec: { stages: [{ environment: 'dev' }, { environment: 'prod' }], ...(selector ? { selector } : {}) },
  }) as PromotionFlow;

const environments = [environment('dev', ''), environment('prod', 'prod')];
const proposal = (existing = environments) =>
  proposeAdoption({
    namespace: 'n',
    environments: [found('dev', '', ['cart', 'search', 'billing']), found('prod', 'prod', ['cart', 'search'])],
    owner: 'platform',
    flowName: 'main',
    existing: { applications: [], environments: existing, flows: [] },
    deliveryMethods: builtinDeliveryMethods,
  });

describe('adoptIntoFlow', () => {
  it('keeps only the chosen Applications and never re-proposes Environments or a flow that selects them', () => {
    const r = adoptIntoFlow({ proposal: proposal(), flow: flow(), environments, chosen: ['cart', 'billing'] });
    expect(r.candidates.map((c) => [c.application, c.chosen, c.change])).toEqual([
      ['billing', true, 'create'],
      ['cart', true, 'create'],
      ['search', false, 'create'],
    ]);
    expect(r.proposal.applications.map((a) => a.metadata.name)).toEqual(['billing', 'cart']);
    expect(r.proposal.environments).toEqual([]);
    expect(r.proposal.flow).toBeUndefined();
    expect(r.governed).toEqual([]);
    // billing runs in dev only: its workload says so.
    expect(r.proposal.applications[0].spec.workloads).toEqual([
      { kind: 'Deployment', name: 'billing', environments: ['dev'] },
    ]);
  });

  it('drops what discovery would configure in the Environments (they exist), and keeps an Environment where nothing runs', () => {
    const local = (f: FoundEnvironment): FoundEnvironment => ({
      ...f,
      registry: { host: '127.0.0.1:5000', ...(f.registry?.prefix ? { prefix: f.registry.prefix } : {}) },
      workloads: f.workloads.map((w) => ({
        ...w,
        containers: w.containers.map((c) => ({ ...c, image: c.image.replace('reg.example.com', '127.0.0.1:5000') })),
      })),
    });
    const p = proposeAdoption({
      namespace: 'n',
      environments: [local(found('dev', '', ['cart'])), { ...found('prod', 'prod', []), registry: undefined }],
      owner: 'platform',
      deliveryMethods: builtinDeliveryMethods,
    });
    expect(p.findings.map((f) => f.subject)).toEqual(['Environment prod', 'Environment dev', 'PromotionFlow']);
    const r = adoptIntoFlow({ proposal: p, flow: flow(), environments });
    expect(r.proposal.findings).toEqual([
      {
        level: 'undecided',
        subject: 'Environment prod',
        message: 'no workloads found in namespace shop of context prod',
      },
    ]);
  });

  it('adds the chosen names to a flow selector that lists applications, as a governed change', () => {
    const r = adoptIntoFlow({
      proposal: proposal(),
      flow: flow({ applications: ['legacy-*'] }),
      environments,
      chosen: ['search'],
    });
    expect(r.proposal.flow?.spec.selector).toEqual({ applications: ['legacy-*', 'search'] });
    expect(r.proposal.flow?.spec.stages).toEqual(flow().spec.stages);
    expect(r.governed).toEqual(['PromotionFlow/main']);
    expect(r.proposal.updates).toEqual(['PromotionFlow/main']);
    expect(r.proposal.findings).toContainEqual({
      level: 'note',
      subject: 'PromotionFlow main',
      message:
        'selector.applications gains search: a governed change (whoever applies it needs verb govern on promotionflows/main)',
    });
  });

  it('reports a chosen Application the flow selects by team only, instead of changing the flow', () => {
    const r = adoptIntoFlow({
      proposal: proposal(),
      flow: flow({ teams: ['team-b'] }),
      environments,
      chosen: ['cart'],
    });
    expect(r.proposal.flow).toBeUndefined();
    expect(r.proposal.findings).toContainEqual(
      expect.objectContaining({
        level: 'undecided',
        subject: 'Application cart',
        message: expect.stringContaining('flow main does not select it'),
      }),
    );
  });

  it('reports chosen names discovery did not propose, and a delivery that reads differently, without inventing either', () => {
    const helmEnvs = [environment('dev', '', 'helmRelease'), environment('prod', 'prod')];
    const r = adoptIntoFlow({
      proposal: proposal(helmEnvs),
      flow: flow(),
      environments: helmEnvs,
      chosen: ['cart', 'nope'],
    });
    expect(r.proposal.applications.map((a) => a.metadata.name)).toEqual(['cart']);
    expect(r.proposal.findings).toContainEqual({
      level: 'undecided',
      subject: 'Application nope',
      message:
        'discovery proposes no Application nope in the Environments of flow main (dev, prod): choose among billing, cart, search',
    });
    expect(r.proposal.findings).toContainEqual(
      expect.objectContaining({
        level: 'note',
        subject: 'Environment dev',
        message: expect.stringContaining('look delivered by patch but the Environment delivers by helmRelease'),
      }),
    );
  });
});
