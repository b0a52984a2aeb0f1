/**
 * Unique target tag from flow.spec.tagTemplate. Pure: the caller passes the plan start time so every
 * retry and every restart renders the same tag (it is also persisted in status before the copy).
 */
export const DEFAULT_TAG_TEMPLATE = '{version}-{timestamp}';
const PLACEHOLDERS = new Set(['tag', 'version', 'timestamp', 'shortDigest']);

export function formatTimestamp(d: Date): string {
  // 2026-12-02T10:15:00.000Z -> 20261202T101500Z
  return d
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replaceAll('-', '')
    .replaceAll(':', '');
}

/** The version part of a tag: `v1.2.3` out of `v1.2.3-rc.1+build`; the whole tag when it is not semver-like. */
export function versionOf(tag: string): string {
  const m = /^v?\d+(\.\d+){0,2}/.exec(tag);
  return m ? m[0] : tag;
}

export function renderTag(template: string | undefined, input: { tag: string; digest: string; time: Date }): string {
  const tpl = template || DEFAULT_TAG_TEMPLATE;
  const out = tpl.replace(/\{([^}]*)\}/g, (_m, name: string) => {
    if (!PLACEHOLDERS.has(name)) {
      throw new Error(
        `tagTemplate "${tpl}": unknown placeholder {${name}}; use {tag}, {version}, {timestamp} or {shortDigest}`,
      );
    }
    switch (name) {
      case 'tag':
        return input.tag;
      case 'version':
        return versionOf(input.tag);
      case 'timestamp':
        return formatTimestamp(input.time);
      default:
        return input.digest.replace(/^sha256:/, '').slice(0, 12);
    }
  });
  // OCI tag grammar: [A-Za-z0-9_][A-Za-z0-9._-]{0,127}
  let tag = out.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 128);
  if (!/^[A-Za-z0-9_]/.test(tag)) tag = `_${tag}`.slice(0, 128);
  if (!tag) throw new Error(`tagTemplate "${tpl}" renders an empty tag`);
  return tag;
}
