/** One operation of an OpenAPI description, matched by method and path template. */
export interface Route<Op> {
  template: string;
  method: string;
  re: RegExp;
  /** The template's parameter names, in order (the regex's groups). */
  names: string[];
  op: Op;
}

/**
 * The routes of an OpenAPI description's `paths` (the stand-ins of SaaS APIs: Port, GitHub), each
 * template a regex with a group per parameter (`{id}`, or `\{id\}` as some descriptions escape it),
 * literal segments before parameters (…/entities/search before …/entities/{id}).
 */
export function openApiRoutes<Op>(paths: Record<string, Record<string, unknown>>): Array<Route<Op>> {
  const routes: Array<Route<Op>> = [];
  for (const [template, methods] of Object.entries(paths)) {
    const names: string[] = [];
    const re = new RegExp(
      `^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{([^}]+)\\?\}/g, (_, n) => {
        names.push(n);
        return '([^/]+)';
      })}$`,
    );
    for (const [method, op] of Object.entries(methods))
      if (['get', 'post', 'put', 'patch', 'delete'].includes(method))
        routes.push({ template, method: method.toUpperCase(), re, names, op: op as Op });
  }
  return routes.sort((a, b) => a.names.length - b.names.length);
}
