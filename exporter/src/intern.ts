/**
 * Returns one instance per distinct string, remembering at most `max` of them (past that it passes
 * strings through unchanged). Strings parsed from JSON are fresh copies each time: the exporter
 * holds an apiVersion, kind, namespace and blueprint per object, and at 10,000 objects the copies
 * of a handful of values were megabytes of its heap.
 */
export function interner(max = 1024): <S extends string | undefined>(s: S) => S {
  const seen = new Map<string, string>();
  return <S extends string | undefined>(s: S): S => {
    if (s === undefined) return s;
    const known = seen.get(s);
    if (known !== undefined) return known as S;
    if (seen.size < max) seen.set(s, s);
    return s;
  };
}
