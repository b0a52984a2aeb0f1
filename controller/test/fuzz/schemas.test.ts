// Property-based fuzzing of the CRD schemas through the project's client-side validator
// (packages/api/src/validate.ts, the same OpenAPI schema the apiserver enforces, CEL aside): specs
// are generated from each kind's own schema, mostly conforming with junk at random depths, so
// rejections come from every level. Every rejection must name the field path it is about.
import { KINDS, type KpromoKind, openApiSchema, RESOURCES, validateResource } from '@kpromo/api';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const runs = (n: number) => ({ numRuns: Math.max(1, Math.round(n * SCALE)) });

type Schema = {
  type?: string;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: Schema | boolean;
  default?: unknown;
};

const junk = fc.oneof(
  fc.anything({ maxDepth: 2, maxKeys: 3 }),
  fc.constantFrom(null, '', 0, -1, 1.5, true, [], {}, '__proto__', 'x'.repeat(300)),
  fc.string({ maxLength: 20 }),
);
const PROTO_KEYS = fc.constantFrom('__proto__', 'constructor', 'prototype');

/** A value for a schema node: conforming most of the time, junk sometimes, at every depth. */
function arb(s: Schema, depth = 0): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 12, arbitrary: conforming(s, depth) }, { weight: 1, arbitrary: junk });
}

function conforming(s: Schema, depth: number): fc.Arbitrary<unknown> {
  if (s.enum) return fc.constantFrom(...s.enum);
  switch (s.type) {
    case 'string': {
      if (s.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      const max = Math.min(s.maxLength ?? 40, 60);
      if (s.pattern) {
        const re = new RegExp(s.pattern);
        return fc.oneof(
          {
            weight: 4,
            // No length filter (a digest is longer than `max`, so it would never pass): the
            // validator reports overlong strings itself.
            arbitrary: fc.stringMatching(re, { size: 'xsmall' }),
          },
          { weight: 1, arbitrary: fc.string({ maxLength: max }) },
        );
      }
      return fc.string({ minLength: s.minLength ?? 0, maxLength: Math.max(max, s.minLength ?? 0) });
    }
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1000, max: s.maximum ?? 100_000 });
    case 'number':
      return fc.double({ min: s.minimum ?? -1000, max: s.maximum ?? 100_000, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const item = s.items ? arb(s.items, depth + 1) : junk;
      return fc.array(item, { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 3, 3) });
    }
    case 'object': {
      if (s.properties) {
        const props: Record<string, fc.Arbitrary<unknown>> = {};
        for (const [k, v] of Object.entries(s.properties)) props[k] = arb(v, depth + 1);
        const required = s.required ?? [];
        const obj = fc.record(props, { requiredKeys: required as never[] });
        // Sometimes a required field goes missing, or an unknown / prototype-named key comes along.
        return fc.oneof(
          { weight: 8, arbitrary: obj },
          {
            weight: 1,
            arbitrary: fc.tuple(obj, fc.constantFrom(...(required.length ? required : ['x']))).map(([o, k]) => {
              const c = { ...(o as object) } as Record<string, unknown>;
              delete c[k];
              return c;
            }),
          },
          {
            weight: 1,
            arbitrary: fc
              .tuple(obj, fc.oneof(PROTO_KEYS, fc.string({ maxLength: 8 })), junk)
              .map(([o, k, v]) => ({ ...JSON.parse(JSON.stringify({ [k]: v }) ?? '{}'), ...(o as object) })),
          },
        );
      }
      const ap = s.additionalProperties;
      const val = typeof ap === 'object' ? arb(ap, depth + 1) : junk;
      return fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), PROTO_KEYS), val, { maxKeys: 3 });
    }
    default:
      return junk;
  }
}

const specSchema = (kind: KpromoKind) =>
  (openApiSchema(RESOURCES[kind]) as { properties: { spec: Schema } }).properties.spec;

/**
 * A field path as validate.ts writes it: `spec: …`, `spec.delivery.git.path: …`,
 * `spec.stages.0.environment: …`, or the missing spec itself. (Map keys appear as they are, so a
 * label key with dots or spaces reads ambiguously: hence no stricter grammar after `spec.`.)
 */
const NAMES_A_PATH = /^(spec(\..*)?: .+|\(root\): missing required field spec)$/s;

describe.each(KINDS)('%s spec', (kind) => {
  it('is accepted, or every problem names its field path', () => {
    let rejected = 0;
    fc.assert(
      fc.property(fc.oneof({ weight: 9, arbitrary: arb(specSchema(kind)) }, { weight: 1, arbitrary: junk }), (spec) => {
        const obj = { apiVersion: 'promotions.kpromo.dev/v1alpha1', kind, metadata: { name: 'fuzz' }, spec };
        const r = validateResource(obj);
        if (r.ok) return;
        rejected++;
        expect(r.error.message).toMatch(new RegExp(`^${kind} "fuzz" is invalid: `));
        expect(r.error.problems.length).toBeGreaterThan(0);
        for (const p of r.error.problems) expect(p, JSON.stringify(spec)).toMatch(NAMES_A_PATH);
      }),
      runs(150),
    );
    // The generator must reach the validator's rejections, not only valid specs.
    expect(rejected).toBeGreaterThan(0);
  });
});

describe('resources of unknown shape', () => {
  it('an unknown kind or a non-object is refused with the list of kinds', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.anything({ maxDepth: 2 }),
          fc.record({ kind: fc.string({ maxLength: 20 }), metadata: fc.anything({ maxDepth: 1 }) }),
        ),
        (obj) => {
          const kind = (obj as { kind?: unknown } | null)?.kind;
          if (typeof kind === 'string' && (KINDS as readonly string[]).includes(kind)) return;
          if (typeof kind === 'string' && kind in Object.prototype) return; // see the known bug below
          const r = validateResource(obj);
          expect(r.ok).toBe(false);
          if (!r.ok) expect(r.error.problems.join()).toMatch(/^unknown kind; expected one of Application/);
        },
      ),
      runs(200),
    );
  });

  // Found by this suite: `kind in RESOURCES` was true for names inherited from Object.prototype.
  it('an Object.prototype name as kind is refused as unknown', () => {
    for (const kind of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      const r = validateResource({ kind, metadata: { name: 'x' } });
      expect(r.ok).toBe(false);
    }
  });
});
