import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Config, ConfigReader } from '@backstage/config';
import { crdToPortActions } from '@kpromo/exporter';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readPortConfig } from '../src/config.js';
import { PortWebhookBody } from '../src/port.js';

/** `promotions.port` of an app-config, read as the module reads it. */
const portConfigOf = (c: Config) => readPortConfig(c.getConfig('promotions.port'));

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const spec = parse(readFileSync(join(root, 'packages/port-client/port-api/openapi.yaml'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(spec, 'port');
const validate = ajv.getSchema('port#/paths/~1v1~1actions/post/requestBody/content/application~1json/schema')!;
const files = readdirSync(join(root, 'examples/port')).filter((f) => f.endsWith('.json'));

describe('examples/port action definitions', () => {
  it('exist for promote, rollback, continuing a wave, stopping and resuming the line, and adopting', () => {
    expect(files.sort()).toEqual([
      'kpromo_adopt.json',
      'kpromo_continue.json',
      'kpromo_promote.json',
      'kpromo_resume_line.json',
      'kpromo_rollback.json',
      'kpromo_stop_line.json',
    ]);
  });

  for (const f of files)
    it(`${f} is a valid POST /v1/actions body and sends what the webhook parses`, () => {
      const action = JSON.parse(readFileSync(join(root, 'examples/port', f), 'utf8'));
      expect(validate(action), ajv.errorsText(validate.errors)).toBe(true);
      expect(action.invocationMethod.url).toMatch(/\/api\/promotions\/port\/webhook$/);
      // The templated body has the shape the webhook accepts (templates stand in for values).
      const parsed = PortWebhookBody.safeParse(action.invocationMethod.body);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
      expect(parsed.data?.action).toBe('{{ .action.identifier }}');
      // The run acts as port:<email of the trigger user> (x-kpromo-user); RBAC for that identity decides.
      expect(parsed.data?.user).toBe('{{ .trigger.by.user.email }}');
      // Identity comes from the trigger only: nothing in the inputs names an approver.
      expect(JSON.stringify(action.invocationMethod.body.inputs)).not.toMatch(/approv|user/i);
    });

  it('have the identifiers the webhook accepts by default (promotions.port.actions)', () => {
    const port = portConfigOf(new ConfigReader({ promotions: { port: { clientId: 'id', clientSecret: 's' } } }));
    const ids = files.map((f) => JSON.parse(readFileSync(join(root, 'examples/port', f), 'utf8')).identifier);
    expect(ids.sort()).toEqual(
      [
        port?.actions.promote,
        port?.actions.rollback,
        port?.actions.continue,
        port?.actions.stopLine,
        port?.actions.resumeLine,
        port?.actions.adopt,
      ].sort(),
    );
    expect(ids.sort()).toEqual([
      'kpromo_adopt',
      'kpromo_continue',
      'kpromo_promote',
      'kpromo_resume_line',
      'kpromo_rollback',
      'kpromo_stop_line',
    ]);
  });

  it("the exporter's actions for a discovered CRD send what the webhook parses, under the identifiers resourceActions accepts", () => {
    const port = portConfigOf(
      new ConfigReader({
        promotions: {
          port: {
            clientId: 'id',
            clientSecret: 's',
            resourceActions: [{ blueprint: 'widget', apiVersion: 'example.com/v1', plural: 'widgets' }],
          },
        },
      }),
    );
    const actions = crdToPortActions(
      {
        metadata: { name: 'widgets.example.com' },
        spec: {
          group: 'example.com',
          scope: 'Namespaced',
          names: { kind: 'Widget', singular: 'widget', plural: 'widgets' },
          versions: [
            {
              name: 'v1',
              schema: { openAPIV3Schema: { properties: { spec: { properties: { size: { type: 'integer' } } } } } },
            },
          ],
        },
      },
      { webhookUrl: 'https://backstage.example.com/api/promotions/port/webhook', dialect: 'port-k8s-exporter' },
    );
    expect(actions.map((a) => a.identifier)).toEqual(Object.keys(port.resourceActions[0].actions));
    for (const a of actions) {
      expect(validate(a), ajv.errorsText(validate.errors)).toBe(true);
      const parsed = PortWebhookBody.safeParse((a.invocationMethod as { body: unknown }).body);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
      expect(parsed.data?.resource?.name).toMatch(/^\{\{ .+ \}\}$/);
      expect(parsed.data?.user).toBe('{{ .trigger.by.user.email }}');
    }
  });

  it('a definition with a wrong field is rejected by the spec (the check can fail)', () => {
    const bad = {
      identifier: 'x',
      trigger: { type: 'self-service', operation: 'DAY-2' },
      invocationMethod: { type: 'CARRIER-PIGEON' },
    };
    expect(validate(bad)).toBe(false);
  });
});
