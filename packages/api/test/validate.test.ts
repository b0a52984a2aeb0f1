import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { validateResource } from '../src/index.js';

const examples = resolve(__dirname, '../../../examples');
const docs = (dir: string) =>
  readdirSync(join(examples, dir))
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(examples, dir, f), 'utf8')).map((d) => [f, d.toJS()] as const));

describe('validateResource (client-side, same schema as the CRDs)', () => {
  it.each(docs('samples'))('accepts %s', (_f, obj) => {
    const r = validateResource(obj);
    expect(r.ok ? 'ok' : r.error.message).toBe('ok');
  });

  // CEL rules are only checked by the apiserver; these are the schema-level invalid examples.
  const schemaInvalid = [
    'environment-bad-delivery.yaml',
    'application-no-owner.yaml',
    'application-bad-repository.yaml',
    'flow-one-stage.yaml',
    'plan-bad-digest.yaml',
    'notification-unknown-event.yaml',
  ];
  it.each(docs('invalid').filter(([f]) => schemaInvalid.includes(f)))(
    'rejects %s with a message naming the field',
    (_f, obj) => {
      const r = validateResource(obj);
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.message).toMatch(/^(Environment|Application|PromotionFlow|PromotionPlan|Notification) "/);
        expect(r.error.problems.some((p) => p.startsWith('spec'))).toBe(true);
      }
    },
  );

  it('rejects an unknown kind with the list of known kinds', () => {
    const r = validateResource({ kind: 'Pipeline', metadata: { name: 'x' } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toContain('expected one of Application, Environment');
  });

  it('names the allowed values of an enum', () => {
    const r = validateResource({
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'Environment',
      metadata: { name: 'e' },
      spec: {
        cluster: { context: 'dev' },
        namespace: 'shop',
        registry: { host: 'r:5000' },
        delivery: { method: 'ftp' },
      },
    });
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.error.problems).toContain('spec.delivery.method: must be one of patch, helmRelease, git, imagePolicy');
  });
});
