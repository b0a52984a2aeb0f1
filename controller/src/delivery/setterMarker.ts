import { isDnsLabel, isDnsSubdomain } from '../kube/names.js';

/**
 * Flux image automation setter markers: a YAML line comment such as
 * `# {"$imagepolicy": "flux-system:podinfo:tag"}` that names the ImagePolicy (`<namespace>:<name>`)
 * whose latest image image-automation-controller writes into that field, and in which form:
 * - `ns:name`: the full reference, `<name>:<tag>` or `<name>:<tag>@<digest>`;
 * - `ns:name:tag`: the tag only;
 * - `ns:name:name`: the image name (repository, with its host) only;
 * - `ns:name:digest`: the digest only.
 * kpromo's git delivery writes a marked field in the same form, so a file Flux also automates keeps
 * one shape whoever writes it.
 */
export const SETTER_KEY = '$imagepolicy';

/** What a marker says to write: the whole image reference or one part of it. */
export type SetterField = 'image' | 'tag' | 'name' | 'digest';

export interface SetterMarker {
  policy: { namespace: string; name: string };
  field: SetterField;
  /** The marker's setter name as written, e.g. `flux-system:podinfo:tag`. */
  setter: string;
}

/** A comment read as a marker: none (a plain comment), a marker, or a marker Flux could not use. */
export type MarkerRead = { marker: SetterMarker } | { problem: string } | undefined;

const SUFFIXES: Readonly<Record<string, SetterField>> = { tag: 'tag', name: 'name', digest: 'digest' };

/**
 * Reads a setter marker from a YAML comment's text (what follows `#`; the YAML library's
 * `node.comment`). Flux (kyaml) strips leading `#`s and reads the rest as a JSON object of strings;
 * a comment that is not such an object is a plain comment (undefined). One that is, with an
 * `$imagepolicy` key, is a marker: a problem when the value is not `<namespace>:<name>[:tag|:name|:digest]`
 * with Kubernetes names (Flux would leave such a field alone, which is surely not what its author meant).
 * Pure.
 */
export function readSetterMarker(comment: string | null | undefined): MarkerRead {
  if (!comment?.includes(SETTER_KEY)) return undefined;
  let obj: unknown;
  try {
    obj = JSON.parse(comment.replace(/^#+/, '').trim());
  } catch {
    return undefined;
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj) || !Object.hasOwn(obj, SETTER_KEY)) return undefined;
  const value = (obj as Record<string, unknown>)[SETTER_KEY];
  const shown = JSON.stringify(value)?.slice(0, 120) ?? String(value);
  const bad = (detail: string) => ({
    problem: `Flux setter marker {"${SETTER_KEY}": ${shown}} ${detail}; expected "<namespace>:<name>", optionally followed by ":tag", ":name" or ":digest"`,
  });
  if (typeof value !== 'string') return bad('is not a string');
  // kyaml reads the comment into a map of strings: any other value makes Flux skip the marker.
  if (Object.values(obj).some((v) => typeof v !== 'string'))
    return bad('sits in a JSON object with non-string values, which Flux does not read as a marker');
  const parts = value.split(':');
  if (parts.length < 2 || parts.length > 3) return bad('has the wrong number of ":"-separated parts');
  const [namespace, name, suffix] = parts;
  if (!isDnsLabel(namespace)) return bad(`names namespace ${JSON.stringify(namespace)}, not a Kubernetes namespace`);
  if (!isDnsSubdomain(name)) return bad(`names ImagePolicy ${JSON.stringify(name)}, not a Kubernetes object name`);
  let field: SetterField = 'image';
  if (suffix !== undefined) {
    if (!Object.hasOwn(SUFFIXES, suffix)) return bad(`ends in ":${suffix}", which Flux does not set`);
    field = SUFFIXES[suffix];
  }
  return { marker: { policy: { namespace, name }, field, setter: value } };
}
