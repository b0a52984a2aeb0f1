import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PortStandIn } from '@kpromo/test-harness/port';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../src/config.js';
import { crdToPortActions, type PortAction } from '../src/crdActions.js';
import type { Crd } from '../src/discoverCrds.js';
import { createLogger } from '../src/log.js';
import { actionStep, syncAction } from '../src/portActions.js';
import { createPortClient } from '../src/portClient.js';
import { PortSink } from '../src/portSink.js';

// Self-service actions for discovered CRDs, checked against what port-k8s-exporter's own test
// asserts for its fixture CRD (pkg/crd/crd_test.go, checkBlueprintAndActionsProperties), and every
// definition against Port's published schema for POST /v1/actions.

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const spec = parse(readFileSync(join(root, 'packages/port-client/port-api/openapi.yaml'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(spec, 'port');
const validAction = ajv.getSchema('port#/paths/~1v1~1actions/post/requestBody/content/application~1json/schema')!;
const log = createLogger('silent');
const URL_ = 'https://backstage.example.com/api/promotions/port/webhook';

/** The Go exporter's test CRD (crd_test.go, newFixture). */
const testKind = (scope: 'Namespaced' | 'Cluster'): Crd => ({
  metadata: { name: 'testkinds.testgroup.io' },
  spec: {
    group: 'testgroup.io',
    scope,
    names: { kind: 'TestKind', singular: 'testkind', plural: 'testkinds' },
    versions: [
      {
        name: 'v1',
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  stringProperty: { type: 'string' },
                  intProperty: { type: 'integer' },
                  boolProperty: { type: 'boolean' },
                  nestedProperty: {
                    type: 'object',
                    properties: { nestedStringProperty: { type: 'string' } },
                    required: ['nestedStringProperty'],
                  },
                  anyOfProperty: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
                },
                required: ['stringProperty', 'nestedProperty'],
              },
            },
          },
        },
      },
    ],
  },
});

const inputs = (a: PortAction) => a.trigger.userInputs;
const byOp = (actions: PortAction[]) => Object.fromEntries(actions.map((a) => [a.identifier.split('_')[0], a]));

describe('crdToPortActions (as port-k8s-exporter, invoked by webhook)', () => {
  for (const scope of ['Namespaced', 'Cluster'] as const)
    it(`${scope}: create_/update_/delete_<singular> with the spec as shallow, typed inputs`, () => {
      const actions = crdToPortActions(testKind(scope), { webhookUrl: URL_, dialect: 'port-k8s-exporter' });
      expect(actions.map((a) => a.identifier)).toEqual(['create_testkind', 'update_testkind', 'delete_testkind']);
      const { create, update, delete: del } = byOp(actions);
      for (const a of [create, update]) {
        const p = inputs(a).properties;
        expect(p.stringProperty.type).toBe('string');
        expect(p.intProperty.type).toBe('number');
        expect(p.boolProperty.type).toBe('boolean');
        expect(p.anyOfProperty.type).toBe('string');
        expect(p.nestedProperty).toBeUndefined();
        expect(p.nestedProperty__nestedStringProperty.type).toBe('string');
        expect(inputs(a).required).toContain('stringProperty');
        expect(inputs(a).required).toContain('nestedProperty__nestedStringProperty');
        expect(inputs(a).required).not.toContain('nestedProperty');
      }
      // Create asks for the name (and the namespace of a namespaced kind); update and delete never do.
      expect(inputs(create).properties.name).toMatchObject({ type: 'string', pattern: expect.any(String) });
      expect(inputs(create).required).toContain('name');
      expect('namespace' in inputs(create).properties).toBe(scope === 'Namespaced');
      expect(inputs(create).required?.includes('namespace')).toBe(scope === 'Namespaced');
      expect(inputs(update).properties.namespace).toBeUndefined();
      expect(inputs(del).properties).toEqual({});
      expect(actions.map((a) => a.trigger.operation)).toEqual(['CREATE', 'DAY-2', 'DELETE']);
      for (const a of actions) {
        expect(validAction(a), `${a.identifier}: ${ajv.errorsText(validAction.errors)}`).toBe(true);
        expect(a.trigger.blueprintIdentifier).toBe('testkind');
      }
    });

  it('hides optional inputs without defaults on create; update defaults every input to the entity value', () => {
    const { create, update } = byOp(
      crdToPortActions(testKind('Namespaced'), { webhookUrl: URL_, dialect: 'port-k8s-exporter' }),
    );
    expect(inputs(create).properties.intProperty).toEqual({ type: 'number', visible: false });
    expect(inputs(create).properties.stringProperty.visible).toBeUndefined();
    expect(inputs(update).properties.nestedProperty__nestedStringProperty.default).toEqual({
      jqQuery: '.entity.properties.nestedProperty.nestedStringProperty',
    });
    expect(inputs(update).properties.intProperty.default).toEqual({ jqQuery: '.entity.properties.intProperty' });
  });

  it('is invoked by WEBHOOK at the configured URL; the body names the object and its spec, never its kind', () => {
    const {
      create,
      update,
      delete: del,
    } = byOp(crdToPortActions(testKind('Namespaced'), { webhookUrl: URL_, dialect: 'port-k8s-exporter' }));
    for (const a of [create, update, del]) {
      const inv = a.invocationMethod;
      expect(inv).toMatchObject({ type: 'WEBHOOK', url: URL_, synchronized: false });
      expect(inv.body).toMatchObject({
        runId: '{{ .run.id }}',
        action: '{{ .action.identifier }}',
        user: '{{ .trigger.by.user.email }}',
      });
      expect(JSON.stringify(inv.body)).not.toMatch(/testgroup|TestKind|testkinds/);
    }
    const body = (a: PortAction) => a.invocationMethod.body.resource;
    expect(body(create)).toMatchObject({ name: '{{ .inputs.name }}', namespace: '{{ .inputs.namespace }}' });
    expect(body(create).spec).toContain('split("__")');
    expect(body(update)).toMatchObject({
      name: '{{ .entity.identifier }}',
      namespace: '{{ .entity.properties.namespace }}',
    });
    expect(body(del)).toEqual({ name: '{{ .entity.identifier }}', namespace: '{{ .entity.properties.namespace }}' });
  });

  it('kpromo configs: the blueprint is the kind, the name comes from the cluster:namespace:name identifier, the cluster is sent', () => {
    const { update } = byOp(crdToPortActions(testKind('Namespaced'), { webhookUrl: URL_, dialect: 'kpromo' }));
    expect(update.identifier).toBe('update_TestKind');
    expect(update.invocationMethod.body.resource).toMatchObject({
      name: '{{ .entity.identifier | split(":") | .[2] }}',
      cluster: '{{ .entity.properties.cluster }}',
    });
    expect(validAction(update), ajv.errorsText(validAction.errors)).toBe(true);
  });

  it('drops fields Port cannot take as inputs (names, formats, non-string enums); the check can fail', () => {
    const crd = testKind('Namespaced');
    const s = crd.spec.versions[0].schema!.openAPIV3Schema!.properties!.spec!;
    s.properties = {
      'dotted.name': { type: 'string' },
      size: { type: 'integer', format: 'int32', enum: [1, 2] },
      color: { type: 'string', enum: ['red', 'blue'], format: 'email' },
      labels: { type: 'object' },
    };
    const { create } = byOp(crdToPortActions(crd, { webhookUrl: URL_, dialect: 'port-k8s-exporter' }));
    expect(Object.keys(inputs(create).properties).sort()).toEqual(['color', 'name', 'namespace', 'size']);
    expect(inputs(create).properties.size).toEqual({ type: 'number', visible: false });
    expect(inputs(create).properties.color).toMatchObject({ enum: ['red', 'blue'], format: 'email' });
    expect(validAction(create)).toBe(true);
    expect(validAction({ ...create, invocationMethod: { type: 'WEBHOOK' } })).toBe(false);
  });
});

describe('creating the actions in Port (overwriteCrdsActions)', () => {
  let port: PortStandIn;
  let api: ReturnType<typeof createPortClient>['api'];
  beforeEach(async () => {
    port = new PortStandIn();
    await port.start();
    ({ api } = createPortClient({
      baseUrl: port.url,
      clientId: port.clientId,
      clientSecret: port.clientSecret,
      log,
      maxBackoffMs: 100,
    }));
  });
  afterEach(async () => {
    await port.stop();
    expect(port.violations).toEqual([]);
  });

  it('decides as the Go exporter: create when missing, replace only with overwrite, else keep', () => {
    expect(actionStep(false, false)).toBe('create');
    expect(actionStep(false, true)).toBe('create');
    expect(actionStep(true, false)).toBe('keep');
    expect(actionStep(true, true)).toBe('replace');
  });

  it('the sink creates the blueprint first, then the actions; an existing action is kept, or replaced with overwrite', async () => {
    const crd = testKind('Namespaced');
    const [create, ...rest] = crdToPortActions(crd, { webhookUrl: URL_, dialect: 'port-k8s-exporter' });
    const sink = new PortSink({
      api,
      log,
      stateKey: 'k',
      blueprints: [{ identifier: 'testkind', title: 'Testkind', schema: { properties: {} } }],
      createBlueprints: true,
      concurrency: 1,
      ownership: 'datasource',
    });
    sink.addActions([create, ...rest]);
    expect(await Promise.all([...sink.actions.values()])).toEqual(['created', 'created', 'created']);
    expect(port.blueprints.has('testkind')).toBe(true);
    // The three syncs run side by side once the blueprint exists: which request Port sees first is
    // up to the scheduler (under load, delete before update was seen), so the set is what is checked.
    expect([...port.actions.keys()].sort()).toEqual(['create_testkind', 'delete_testkind', 'update_testkind']);
    // Edited in Port meanwhile: kept without overwrite, replaced with it.
    port.actions.set('create_testkind', { ...create, title: 'Edited by hand' });
    expect(await syncAction(api, create, false, log)).toBe('kept');
    expect(port.actions.get('create_testkind')?.title).toBe('Edited by hand');
    expect(await syncAction(api, create, true, log)).toBe('updated');
    expect(port.actions.get('create_testkind')).toEqual(create);
  });

  it('an action on a blueprint Port does not have fails, and says so', async () => {
    const [create] = crdToPortActions(testKind('Namespaced'), { webhookUrl: URL_, dialect: 'port-k8s-exporter' });
    expect(await syncAction(api, create, false, log)).toBe('failed');
    expect(port.actions.size).toBe(0);
  });
});

describe('config', () => {
  it('actionsWebhookUrl turns actions on; without it crdsToDiscover warns that none are created', async () => {
    const on = await parseConfig({ crdsToDiscover: 'true', actionsWebhookUrl: URL_, resources: [] });
    expect(on).toMatchObject({ actionsWebhookUrl: URL_, overwriteCrdsActions: false, warnings: [] });
    const off = await parseConfig({ crdsToDiscover: 'true', resources: [] });
    expect(off.warnings.join()).toMatch(/no self-service actions .* without actionsWebhookUrl/);
    await expect(parseConfig({ actionsWebhookUrl: 'ftp://x', resources: [] })).rejects.toThrow(/actionsWebhookUrl/);
  });
});
