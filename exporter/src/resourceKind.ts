/** A resource kind as `group/version/plural` (core resources: `v1/plural`). */
export interface ResourceKind {
  group: string;
  version: string;
  plural: string;
}

export function parseKind(kind: string): ResourceKind {
  const parts = kind.split('/');
  if (parts.length === 2) return { group: '', version: parts[0], plural: parts[1] };
  if (parts.length === 3 && parts.every(Boolean)) return { group: parts[0], version: parts[1], plural: parts[2] };
  throw new Error(`kind "${kind}" must be group/version/plural (or v1/plural for core resources)`);
}

export function kindString(k: ResourceKind): string {
  return k.group ? `${k.group}/${k.version}/${k.plural}` : `${k.version}/${k.plural}`;
}

export function apiPath(k: ResourceKind): string {
  return k.group ? `/apis/${k.group}/${k.version}/${k.plural}` : `/api/${k.version}/${k.plural}`;
}
