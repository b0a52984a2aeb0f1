import { KubeError, type KubeRest, type RequestOptions } from '../../src/kube/rest.js';

type Obj = {
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string; generation?: number };
  status?: unknown;
};

/**
 * In-memory stand-in for one apiserver, as far as {@link KubeRest} is used by reconcilers and
 * delivery methods: objects by REST path, optimistic concurrency on resourceVersion (409), 404 for
 * absent objects, the status subresource, merge and strategic-merge patches of plain objects. Every
 * write is passed to `onWrite` (tests record it to check the order of side effects).
 */
export class FakeKube {
  readonly objects = new Map<string, Obj>();
  private rv = 100;

  constructor(
    readonly clusterName = 'fake',
    private readonly onWrite: (method: string, path: string, body: unknown) => void = () => undefined,
  ) {}

  /** As a KubeRest (the subset reconcilers use). */
  get rest(): KubeRest {
    return this as unknown as KubeRest;
  }

  /** Stores `obj` at `path` (as a create would), with a uid and resourceVersion. */
  seed<T extends Obj>(path: string, obj: T): T {
    const stored = structuredClone(obj);
    stored.metadata.uid ??= `uid-${stored.metadata.name}`;
    stored.metadata.resourceVersion = String(++this.rv);
    this.objects.set(path, stored);
    return structuredClone(stored);
  }

  private notFound(method: string, path: string): KubeError {
    return new KubeError(404, 'NotFound', method, path, this.clusterName, `${path} not found`);
  }

  async get<T>(path: string): Promise<T> {
    const o = this.objects.get(path);
    if (!o) throw this.notFound('GET', path);
    return structuredClone(o) as T;
  }

  async getOrUndefined<T>(path: string): Promise<T | undefined> {
    const o = this.objects.get(path);
    return o ? (structuredClone(o) as T) : undefined;
  }

  async put<T>(path: string, body: Obj): Promise<T> {
    const isStatus = path.endsWith('/status');
    const base = isStatus ? path.slice(0, -'/status'.length) : path;
    const cur = this.objects.get(base);
    if (!cur) throw this.notFound('PUT', path);
    if (body.metadata.resourceVersion !== cur.metadata.resourceVersion)
      throw new KubeError(409, 'Conflict', 'PUT', path, this.clusterName, 'the object has been modified');
    this.onWrite('PUT', path, isStatus ? body.status : body);
    const next: Obj = isStatus ? { ...cur, status: structuredClone(body.status) } : structuredClone(body);
    next.metadata = { ...next.metadata, resourceVersion: String(++this.rv) };
    this.objects.set(base, next);
    return structuredClone(next) as T;
  }

  /** Suffixes of generated names, in order (the apiserver's are random). */
  private generated = 0;

  async create<T>(collectionPath: string, body: Obj & { metadata: { generateName?: string } }): Promise<T> {
    this.onWrite('POST', collectionPath, body);
    let obj = body;
    if (!body.metadata.name && body.metadata.generateName) {
      const { generateName, ...metadata } = body.metadata;
      obj = {
        ...body,
        metadata: { ...metadata, name: `${generateName}${(++this.generated).toString(36).padStart(5, 'x')}` },
      };
    }
    const path = `${collectionPath}/${obj.metadata.name}`;
    if (this.objects.has(path))
      throw new KubeError(409, 'AlreadyExists', 'POST', path, this.clusterName, `${path} already exists`);
    return this.seed(path, obj) as T;
  }

  /** Server-side apply, as far as fake objects go: creates the object or merges `body` into it. */
  async apply<T>(path: string, body: Obj, _fieldManager: string): Promise<T> {
    this.onWrite('APPLY', path, body);
    const cur = this.objects.get(path);
    if (!cur) return this.seed(path, body) as T;
    const next = mergeByName(structuredClone(cur), body) as Obj;
    next.metadata.resourceVersion = String(++this.rv);
    this.objects.set(path, next);
    return structuredClone(next) as T;
  }

  async mergePatch<T>(path: string, patch: unknown): Promise<T> {
    return this.request<T>('PATCH', path, { body: patch, contentType: 'application/merge-patch+json' });
  }

  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    if (method === 'GET') {
      if (this.objects.has(path)) return this.get<T>(path);
      // A collection: its items (e.g. the pods a rollout check lists).
      // labelSelector: equality terms only (k=v,k2=v2).
      const terms = String(opts.query?.labelSelector ?? '')
        .split(',')
        .filter(Boolean)
        .map((t) => t.split('=') as [string, string]);
      const items = [...this.objects]
        .filter(([p]) => p.startsWith(`${path}/`))
        .map(([, o]) => structuredClone(o))
        .filter((o) => terms.every(([k, v]) => (o.metadata as { labels?: Record<string, string> }).labels?.[k] === v));
      return { items } as T;
    }
    if (method === 'PATCH') {
      const cur = this.objects.get(path);
      if (!cur) throw this.notFound(method, path);
      this.onWrite(method, path, opts.body);
      const next = mergeByName(structuredClone(cur), opts.body) as Obj;
      next.metadata.resourceVersion = String(++this.rv);
      this.objects.set(path, next);
      return structuredClone(next) as T;
    }
    throw new Error(`FakeKube: ${method} ${path} is not implemented`);
  }
}

/** JSON merge patch, except that arrays of objects with a `name` merge by name (strategic merge of containers). */
function mergeByName(target: unknown, patch: unknown): unknown {
  if (Array.isArray(patch) && Array.isArray(target) && patch.every((p) => p && typeof p === 'object' && 'name' in p)) {
    const out = [...target];
    for (const p of patch as Array<{ name: string }>) {
      const i = out.findIndex((t) => (t as { name?: string })?.name === p.name);
      if (i >= 0) out[i] = mergeByName(out[i], p);
      else out.push(p);
    }
    return out;
  }
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = target && typeof target === 'object' ? { ...(target as object) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergeByName(out[k], v);
  }
  return out;
}
