import { isMap, isScalar, parseDocument } from 'yaml';

// Never fold long lines: an image reference must stay on one line to stay readable in diffs.
const TO_STRING = { lineWidth: 0 } as const;

export interface ImageValue {
  /** Image repository including the registry host, e.g. registry.example.com/prod/app. */
  image: string;
  tag: string;
  digest: string;
}

/** `repo:tag@digest`: the tag for humans, the digest pins what actually runs. */
export function imageRef(v: ImageValue): string {
  return `${v.image}:${v.tag}@${v.digest}`;
}

/**
 * Sets the image at a dot path in a YAML document, keeping comments and formatting (Document API).
 * An object there gets its tag and digest (and repository, when it has that key) set; a string, or
 * nothing yet, gets the full image reference. Pure: the caller does the I/O.
 */
export function setImageInYaml(
  text: string,
  valuesPath: string,
  value: ImageValue,
): { text: string; changed: boolean } {
  const doc = parseDocument(text);
  if (doc.errors.length) throw new Error(`invalid YAML: ${doc.errors[0].message}`);
  const path = valuesPath.split('.').filter(Boolean);
  if (!path.length) throw new Error('valuesPath is empty');
  const node = doc.getIn(path, true);
  if (isMap(node)) {
    const fields: Record<string, string> = { tag: value.tag, digest: value.digest };
    if (node.has('repository')) fields.repository = value.image;
    let changed = false;
    for (const [k, v] of Object.entries(fields)) {
      if (node.get(k) !== v) {
        node.set(k, v);
        changed = true;
      }
    }
    return { text: changed ? doc.toString(TO_STRING) : text, changed };
  }
  if (node !== undefined && !isScalar(node)) {
    throw new Error(`${valuesPath} is a list, expected an image string or an object with tag/digest`);
  }
  const ref = imageRef(value);
  if (isScalar(node) && node.value === ref) return { text, changed: false };
  if (isScalar(node))
    node.value = ref; // keeps the node's comments and quoting style
  else doc.setIn(path, ref);
  return { text: doc.toString(TO_STRING), changed: true };
}
