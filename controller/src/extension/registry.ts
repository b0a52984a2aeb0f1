/**
 * Extensions of one family (delivery methods, workload kinds, notification providers, check
 * providers) by name, in registration order: the built-ins first, then the plugins'. Every family
 * has this one shape, and the composition root (runtime, session) hands each in: no consumer falls
 * back to the built-ins on its own, so a plugin's extension is never silently missing somewhere.
 */
export interface Registry<T> extends ReadonlyMap<string, T> {
  /** What one entry is called in messages, e.g. `delivery method`. */
  readonly family: string;
  /** Why `name` cannot be looked up (naming it and the registered names), or undefined when it can. */
  unknown(name: string): string | undefined;
  /** The entry named `name`; throws {@link UnknownExtensionError} with {@link unknown}'s message otherwise. */
  require(name: string): T;
}

/** A lookup of a name no built-in and no plugin registered. */
export class UnknownExtensionError extends Error {
  override name = 'UnknownExtensionError';
}

class MapRegistry<T> extends Map<string, T> implements Registry<T> {
  constructor(
    readonly family: string,
    entries: Iterable<readonly [string, T]>,
  ) {
    super(entries);
  }

  unknown(name: string): string | undefined {
    if (this.has(name)) return undefined;
    return `"${name}" is not a registered ${this.family} (registered: ${[...this.keys()].join(', ')})`;
  }

  require(name: string): T {
    const problem = this.unknown(name);
    if (problem) throw new UnknownExtensionError(problem);
    return this.get(name) as T;
  }
}

/** A registry of `items` named by `nameOf` (the plugin loader has already refused duplicates). */
export function registryOf<T>(family: string, items: Iterable<T>, nameOf: (item: T) => string): Registry<T> {
  return new MapRegistry(
    family,
    [...items].map((i) => [nameOf(i), i] as const),
  );
}
