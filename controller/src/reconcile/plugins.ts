import { BUILTIN_DELIVERY_METHODS } from '../delivery/registry.js';
import type { CheckProvider } from '../extension/checkProvider.js';
import type { DeliveryMethod } from '../extension/deliveryMethod.js';
import type { NotificationProvider } from '../extension/notificationProvider.js';
import { type ControllerExtensions, type ControllerPlugin, PluginError } from '../extension/plugin.js';
import { type Registry, registryOf } from '../extension/registry.js';
import type { WorkloadKind } from '../extension/workloadKind.js';
import { BUILTIN_WORKLOAD_KINDS } from '../rollout/registry.js';
import { BUILTIN_CHECK_PROVIDERS } from '../verification/providers/index.js';

/** The built-in notification provider's name (Notification resources with spec.webhook). */
const WEBHOOK_PROVIDER = 'webhook';
const BUILT_IN = 'the controller (built-in)';

const lacksFunction = (item: object, ...names: string[]) => {
  const missing = names.find((n) => typeof (item as Record<string, unknown>)[n] !== 'function');
  return missing ? `has no ${missing}() function` : undefined;
};

/** One registry of named extensions: refuses a second one of the same name, saying who registered the first. */
class Registrar<T extends object> {
  readonly items = new Map<string, T>();
  private readonly owners = new Map<string, string>();

  constructor(
    private readonly what: string,
    private readonly nameOf: (item: T) => unknown,
    private readonly problem: (item: T) => string | undefined,
  ) {}

  add(owner: string, item: T, plugin?: string): void {
    const where = plugin ? `plugin "${plugin}": ` : '';
    const name = item && typeof item === 'object' ? this.nameOf(item) : undefined;
    if (typeof name !== 'string' || !name) throw new PluginError(`${where}a ${this.what} needs a non-empty name`);
    const problem = this.problem(item);
    if (problem) throw new PluginError(`${where}${this.what} "${name}" ${problem}`);
    const first = this.owners.get(name);
    if (first) throw new PluginError(`${where}${this.what} "${name}" is already registered by ${first}`);
    this.owners.set(name, owner);
    this.items.set(name, item);
  }

  /** What was registered, as the controller looks it up. */
  registry(): Registry<T> {
    return registryOf(this.what, this.items.values(), (item) => this.nameOf(item) as string);
  }
}

/**
 * Checks the plugins and merges their extensions with the built-ins (built-ins first, then the
 * plugins in order). Throws {@link PluginError} for a plugin without a name, two plugins of one
 * name, an extension without its functions, or an extension name that is already registered.
 */
export function loadPlugins(plugins: readonly ControllerPlugin[] = []): ControllerExtensions {
  const delivery = new Registrar<DeliveryMethod>(
    'delivery method',
    (m) => m.name,
    (m) => lacksFunction(m, 'deliver'),
  );
  const kinds = new Registrar<WorkloadKind>(
    'workload kind',
    (k) => k.kind,
    (k) =>
      lacksFunction(k, 'ready') ??
      (typeof k.resource?.plural === 'string' && typeof k.resource.version === 'string'
        ? undefined
        : 'has no resource ({ group, version, plural, kind }) to read its objects from'),
  );
  const providers = new Registrar<NotificationProvider>(
    'notification provider',
    (p) => p.name,
    (p) => lacksFunction(p, 'notify'),
  );
  const checks = new Registrar<CheckProvider>(
    'check provider',
    (p) => p.kind,
    // A check's kind is the field holding its settings, beside its `name`.
    (p) => (p.kind === 'name' ? 'is the name field of every check; choose another kind' : lacksFunction(p, 'measure')),
  );
  for (const m of BUILTIN_DELIVERY_METHODS) delivery.add(BUILT_IN, m);
  for (const c of BUILTIN_CHECK_PROVIDERS) checks.add(BUILT_IN, c);
  for (const k of BUILTIN_WORKLOAD_KINDS) kinds.add(BUILT_IN, k);
  providers.add(BUILT_IN, { name: WEBHOOK_PROVIDER, notify: () => undefined });
  const seen = new Set<string>();
  for (const p of plugins) {
    if (typeof p?.name !== 'string' || !p.name) throw new PluginError('a controller plugin needs a non-empty name');
    if (seen.has(p.name)) throw new PluginError(`two controller plugins are named "${p.name}"`);
    seen.add(p.name);
    const owner = `plugin "${p.name}"`;
    for (const m of p.deliveryMethods ?? []) delivery.add(owner, m, p.name);
    for (const k of p.workloadKinds ?? []) kinds.add(owner, k, p.name);
    for (const n of p.notificationProviders ?? []) providers.add(owner, n, p.name);
    for (const c of p.checkProviders ?? []) checks.add(owner, c, p.name);
  }
  providers.items.delete(WEBHOOK_PROVIDER);
  return {
    deliveryMethods: delivery.registry(),
    workloadKinds: kinds.registry(),
    notificationProviders: providers.registry(),
    checkProviders: checks.registry(),
  };
}
