import { type TSchema, type TUnsafe, Type } from '@sinclair/typebox';

/**
 * String enum as `{type: string, enum: [...]}`. TypeBox's own union-of-literals emits `anyOf/const`,
 * which Kubernetes structural schemas reject.
 */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  opts: { description?: string; default?: T[number] } = {},
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...opts });
}

/** A string map (labels, headers). Structural schemas forbid patternProperties, so use additionalProperties. */
export function StringMap(description?: string): TUnsafe<Record<string, string>> {
  return Type.Unsafe<Record<string, string>>({
    type: 'object',
    additionalProperties: { type: 'string' },
    ...(description ? { description } : {}),
  });
}

export const Name = (description: string) =>
  Type.String({
    description,
    minLength: 1,
    maxLength: 253,
    pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
  });

export const SecretKeyRef = Type.Object(
  {
    name: Name('Secret name, in the same namespace as the resource.'),
    key: Type.Optional(Type.String({ description: 'Key in the Secret data.', minLength: 1 })),
  },
  { description: 'Reference to a key in a Secret.' },
);

export const Condition = Type.Object({
  type: Type.String({ minLength: 1, maxLength: 316 }),
  status: StringEnum(['True', 'False', 'Unknown'] as const),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  reason: Type.String({ minLength: 1, maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' }),
  message: Type.String({ maxLength: 32768 }),
});

/** Status fields every kpromo resource carries, following controller-runtime conventions. */
export const StatusBase = {
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  conditions: Type.Optional(
    Type.Unsafe<Array<import('@sinclair/typebox').Static<typeof Condition>>>({
      type: 'array',
      items: Condition,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
  ),
};

export const ImageVersion = Type.Object({
  tag: Type.Optional(Type.String({ description: 'Image tag.', maxLength: 128 })),
  digest: Type.Optional(Type.String({ description: 'Image manifest digest.', pattern: '^sha256:[a-f0-9]{64}$' })),
});

export type { TSchema };
