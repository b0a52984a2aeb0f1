import type { ToolAnnotations } from '@kpromo/plugin-promotions-common';

/** Pure helpers for the Assistant: JSON-schema → form fields, argument coercion, tool safety. */

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  items?: JsonSchema;
  description?: string;
  title?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  anyOf?: JsonSchema[];
  additionalProperties?: boolean | JsonSchema;
}

export interface ToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: JsonSchema;
  annotations?: ToolAnnotations;
}

export type FieldKind = 'text' | 'number' | 'boolean' | 'enum' | 'list' | 'json';

export interface FormField {
  name: string;
  label: string;
  kind: FieldKind;
  required: boolean;
  description?: string;
  options?: string[];
  defaultValue?: unknown;
}

function typeOf(s: JsonSchema): string | undefined {
  if (Array.isArray(s.type)) return s.type.find((t) => t !== 'null');
  if (s.type) return s.type;
  const alt = s.anyOf?.find((x) => x.type && x.type !== 'null');
  return alt ? typeOf(alt) : undefined;
}

/** One form field per top-level property of the tool's input schema. */
export function schemaToFields(schema: JsonSchema): FormField[] {
  const req = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, s]) => {
    const t = typeOf(s);
    let kind: FieldKind = 'json';
    let options: string[] | undefined;
    if (s.enum?.every((v) => typeof v === 'string')) {
      kind = 'enum';
      options = s.enum as string[];
    } else if (t === 'string') kind = 'text';
    else if (t === 'number' || t === 'integer') kind = 'number';
    else if (t === 'boolean') kind = 'boolean';
    else if (t === 'array' && s.items && ['string', 'number', 'integer'].includes(typeOf(s.items) ?? '')) kind = 'list';
    return {
      name,
      label: s.title ?? name,
      kind,
      required: req.has(name) && s.default === undefined,
      description: s.description,
      options,
      defaultValue: s.default,
    };
  });
}

/** Form values (strings from inputs) → tool arguments; throws with the field name on bad input. */
export function toArguments(fields: FormField[], values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = values[f.name];
    const empty = v === undefined || v === '' || (Array.isArray(v) && v.length === 0);
    if (empty) {
      if (f.required) throw new Error(`${f.label} is required`);
      continue;
    }
    switch (f.kind) {
      case 'number': {
        const n = Number(v);
        if (Number.isNaN(n)) throw new Error(`${f.label} must be a number`);
        out[f.name] = n;
        break;
      }
      case 'boolean':
        out[f.name] = v === true || v === 'true';
        break;
      case 'list':
        out[f.name] = String(v)
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean);
        break;
      case 'json':
        try {
          out[f.name] = typeof v === 'string' ? JSON.parse(v) : v;
        } catch {
          throw new Error(`${f.label} must be valid JSON`);
        }
        break;
      default:
        out[f.name] = v;
    }
  }
  return out;
}

/** Shared with the backend's chat loop (@kpromo/plugin-promotions-common). */
export { isDestructive, needsConfirmation, toolSafety } from '@kpromo/plugin-promotions-common';
