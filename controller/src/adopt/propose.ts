import { isDeepStrictEqual } from 'node:util';
import type { Application, Environment, PromotionFlow, WorkloadRef } from '@kpromo/api';
import { parseImageRef } from '../util/imageRef.js';

/** Workload kinds `kpromo adopt` reads (Application.spec.workloads[].kind). */
export type AdoptKind = WorkloadRef['kind'];

/** A workload as discovered in one environment's namespace. */
export interface FoundWorkload {
  kind: AdoptKind;
  name: string;
  labels: Record<string, string>;
  containers: Array<{ name: string; image: string }>;
  /** `Kind/name` of a controlling owner (a Job a CronJob created is the CronJob's, not an app of its own). */
  ownedBy?: string;
}

/** A Flux HelmRelease in the environment's namespace, with the values its chart renders from. */
export interface FoundHelmRelease {
  name: string;
  values: unknown;
}

/** A Flux Kustomization and the git source it applies. */
export interface FoundKustomization {
  name: string;
  namespace: string;
  path?: string;
  git?: { url: string; branch?: string };
}

/** A Flux ImagePolicy and the image its ImageRepository scans. */
export interface FoundImagePolicy {
  name: string;
  namespace: string;
  image?: string;
}

/** A Flux object discovery was pointed at (by labels or a reference) and did not read. */
export interface UnreadReference {
  kind: 'Kustomization' | 'GitRepository' | 'ImageRepository';
  namespace: string;
  name: string;
  /** What pointed at it: `workload labels`, `Kustomization <ns>/<name>`, `ImagePolicy <ns>/<name>`. */
  by: string;
}

/** What discovery read in one environment (a kubeconfig context and namespace). */
export interface FoundEnvironment {
  name: string;
  context: string;
  namespace: string;
  workloads: FoundWorkload[];
  helmReleases: FoundHelmRelease[];
  kustomizations: FoundKustomization[];
  imagePolicies: FoundImagePolicy[];
  /** Flux objects outside the environment's namespace that discovery was told not to read. */
  unread?: UnreadReference[];
  /**
   * The registry of an Environment that exists already: its host and prefix are taken as they are
   * instead of inferred (images from elsewhere are reported, as for an inferred one).
   */
  registry?: { host: string; prefix?: string };
}

export interface AdoptionInput {
  /** Namespace of the kpromo resources proposed. */
  namespace: string;
  /** Environments in promotion order. */
  environments: FoundEnvironment[];
  /** Owning team when no workload label names one. */
  owner: string;
  /** Label naming the owning team on workloads (default `team`). */
  ownerLabel?: string;
  /** PromotionFlow name (default `main`). */
  flowName?: string;
  /** What already exists in the namespace: identical resources are not proposed again. */
  existing?: { applications: Application[]; environments: Environment[]; flows: PromotionFlow[] };
}

/** Something adopt could not decide, or chose and wants reviewed. */
export interface Finding {
  level: 'undecided' | 'note';
  /** What it is about: `Environment stable`, `Deployment dev/legacy`, `Application cart`. */
  subject: string;
  message: string;
}

export interface Proposal {
  applications: Application[];
  environments: Environment[];
  flow?: PromotionFlow;
  /** Resources that already exist exactly as proposed (`Kind/name`). */
  unchanged: string[];
  /** Resources that exist and would change (`Kind/name`). */
  updates: string[];
  /** Resources that must be completed by hand before they are applied (`Kind/name`). */
  incomplete: string[];
  findings: Finding[];
}

const API = 'promotions.kpromo.dev/v1alpha1';
const HELM_NAME = 'helm.toolkit.fluxcd.io/name';
const KS_NAME = 'kustomize.toolkit.fluxcd.io/name';
const KS_NAMESPACE = 'kustomize.toolkit.fluxcd.io/namespace';
const APP_NAME = 'app.kubernetes.io/name';

/** One container image of one workload in one environment. */
interface Use {
  env: FoundEnvironment;
  w: FoundWorkload;
  container: string;
  host: string;
  repo: string;
  tag?: string;
  digest?: string;
}

/** A workload an Application lists: `Kind/name/container`. */
const workloadKey = (r: WorkloadRef) => `${r.kind}/${r.name}/${r.container ?? ''}`;
/** One container of one workload, whatever the environment: `Kind/name/container`. */
const refKey = (u: Use) => `${u.w.kind}/${u.w.name}/${u.container}`;
const groupBy = <T>(xs: T[], key: (x: T) => string): Map<string, T[]> => {
  const out = new Map<string, T[]>();
  for (const x of xs) out.set(key(x), [...(out.get(key(x)) ?? []), x]);
  return out;
};
const majority = <T>(xs: T[]): T | undefined => {
  const counts = new Map<T, number>();
  for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
};
const dnsName = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63) || 'app';
const isLoopback = (host: string) => /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/.test(host);

/** The longest common trailing run of path segments. */
function commonSuffix(paths: string[]): string[] {
  const split = paths.map((p) => p.split('/'));
  const out: string[] = [];
  for (let i = 1; ; i++) {
    const seg = split[0].at(-i);
    if (seg === undefined || !split.every((s) => s.length >= i && s.at(-i) === seg)) break;
    out.unshift(seg);
  }
  return out;
}

/** The dot path in a HelmRelease's values whose value is `want`, breadth first (shallowest wins). */
export function findValuePath(values: unknown, want: string): string | undefined {
  const queue: Array<[unknown, string[]]> = [[values, []]];
  while (queue.length) {
    const [v, path] = queue.shift()!;
    if (v === want && path.length) return path.join('.');
    if (v && typeof v === 'object' && !Array.isArray(v) && path.length < 8)
      for (const [k, child] of Object.entries(v)) if (/^[A-Za-z0-9_-]+$/.test(k)) queue.push([child, [...path, k]]);
  }
  return undefined;
}

/**
 * Pure: proposes Applications, Environments and a PromotionFlow for what runs in the given
 * environments, and says what it could not decide.
 *
 * - An environment's registry is the one most of its images come from; images from elsewhere (a
 *   public base image, another team's registry) are reported, not adopted.
 * - Its prefix is what its repositories add in front of the same workload's repository elsewhere
 *   (`stable/shop/cart` in stable, `shop/cart` in dev: prefix `stable`).
 * - Workloads running the same repository are one Application (promotion moves an image), named by
 *   their common `app.kubernetes.io/name`, else their common name, else the repository's last part.
 * - Delivery: `helmRelease` when Flux's helm-controller manages the workloads (their
 *   `helm.toolkit.fluxcd.io/name` label) and the image tag sits at one values path; `git` when a
 *   Flux Kustomization applies them from a GitRepository (the file to edit is left to review);
 *   `imagePolicy` when Flux ImagePolicies scan the apps' repositories; otherwise `patch`.
 */
export function proposeAdoption(input: AdoptionInput): Proposal {
  const findings: Finding[] = [];
  const note = (subject: string, message: string) => findings.push({ level: 'note', subject, message });
  const undecided = (subject: string, message: string) => findings.push({ level: 'undecided', subject, message });
  const ownerLabel = input.ownerLabel ?? 'team';
  const incomplete = new Set<string>();

  for (const env of input.environments)
    for (const r of env.unread ?? [])
      note(
        `${r.kind} ${r.namespace}/${r.name}`,
        `named by ${r.by} in Environment ${env.name}, outside its namespace ${env.namespace}: not read (adoption through the controller reads only the Environment's namespace); fill in what it holds by hand, or run kpromo adopt --env with your own access`,
      );

  // 1. Every container image, and each environment's registry.
  const uses: Use[] = [];
  const hostOf = new Map<string, string>();
  for (const env of input.environments) {
    const mine: Use[] = [];
    for (const w of env.workloads) {
      if (w.ownedBy) {
        note(`${w.kind} ${env.name}/${w.name}`, `skipped: created by ${w.ownedBy}`);
        continue;
      }
      for (const c of w.containers) {
        const r = parseImageRef(c.image);
        mine.push({
          env,
          w,
          container: c.name,
          host: r.host ?? 'docker.io',
          repo: r.repository,
          tag: r.tag,
          digest: r.digest,
        });
      }
    }
    const host = env.registry?.host ?? majority(mine.map((u) => u.host));
    if (!host || !mine.length) {
      undecided(
        `Environment ${env.name}`,
        `no workloads found in namespace ${env.namespace} of context ${env.context}`,
      );
      continue;
    }
    hostOf.set(env.name, host);
    for (const u of mine) {
      if (u.host === host) uses.push(u);
      else
        undecided(
          `${u.w.kind} ${env.name}/${u.w.name}`,
          `container ${u.container} runs ${u.host}/${u.repo}, not from ${host} (the registry the other workloads of ${env.name} use): not adopted; promote it from its own registry in an Environment of its own`,
        );
    }
  }

  // 2. Each environment's prefix, from the same workload's repository in other environments.
  const byWorkload = groupBy(uses, refKey);
  const prefixVotes = new Map<string, string[]>();
  for (const list of byWorkload.values()) {
    const envs = new Set(list.map((u) => u.env.name));
    if (envs.size < 2) continue;
    const suffix = commonSuffix(list.map((u) => u.repo));
    if (!suffix.length) continue;
    for (const u of list) {
      const prefix = u.repo
        .split('/')
        .slice(0, u.repo.split('/').length - suffix.length)
        .join('/');
      prefixVotes.set(u.env.name, [...(prefixVotes.get(u.env.name) ?? []), prefix]);
    }
  }
  const prefixOf = new Map([...prefixVotes].map(([env, votes]) => [env, majority(votes) ?? '']));
  for (const env of input.environments) if (env.registry) prefixOf.set(env.name, env.registry.prefix ?? '');

  // 3. Applications: workloads grouped by repository (without the environment's prefix).
  const groups = new Map<string, Use[]>();
  for (const u of uses) {
    const prefix = prefixOf.get(u.env.name) ?? '';
    if (prefix && !u.repo.startsWith(`${prefix}/`)) {
      undecided(
        `${u.w.kind} ${u.env.name}/${u.w.name}`,
        `runs ${u.repo}, which does not start with ${prefix}/ like the other repositories of ${u.env.name}: not adopted`,
      );
      continue;
    }
    const repo = prefix ? u.repo.slice(prefix.length + 1) : u.repo;
    groups.set(repo, [...(groups.get(repo) ?? []), u]);
  }
  const envNames = input.environments.map((e) => e.name);
  const taken = new Set<string>();
  const applications: Application[] = [];
  const appOfRepo = new Map<string, string>();
  for (const [repo, list] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    const labelled = [...new Set(list.map((u) => u.w.labels[APP_NAME]).filter(Boolean))];
    const names = [...new Set(list.map((u) => u.w.name))];
    // An Application that already promotes this repository keeps its name, owner and settings.
    const adopted = input.existing?.applications.find((a) => a.spec.image.repository === repo);
    let name =
      adopted?.metadata.name ??
      dnsName(labelled.length === 1 ? labelled[0] : names.length === 1 ? names[0] : repo.split('/').at(-1)!);
    const clash = (n: string) =>
      taken.has(n) || !!input.existing?.applications.some((a) => a.metadata.name === n && a !== adopted);
    if (clash(name)) {
      const alt = dnsName(repo.replace(/\//g, '-'));
      undecided(
        `Application ${name}`,
        `${taken.has(name) ? 'two repositories would both be named' : 'an Application promoting another repository is named'} ${name}; ${repo} is named ${alt}`,
      );
      name = alt;
    }
    taken.add(name);
    appOfRepo.set(repo, name);
    if (names.length > 1)
      note(
        `Application ${name}`,
        `${names.join(', ')} run the same image ${repo}: one Application with ${names.length} workloads (a promotion moves the image for all of them)`,
      );
    const owners = [...new Set(list.map((u) => u.w.labels[ownerLabel]).filter(Boolean))];
    if (owners.length !== 1 && !adopted)
      note(
        `Application ${name}`,
        owners.length
          ? `its workloads name several owners (${owners.join(', ')}); owner set to ${owners[0]}`
          : `no workload has label ${ownerLabel}; owner set to ${input.owner}`,
      );
    const kinds = new Set(list.map((u) => u.w.kind));
    const refs: WorkloadRef[] = [];
    for (const same of groupBy(list, refKey).values()) {
      const u = same[0];
      const inEnvs = [...new Set(same.map((x) => x.env.name))];
      const multi = same.some((x) => x.w.containers.length > 1);
      refs.push({
        kind: u.w.kind,
        name: u.w.name,
        ...(multi ? { container: u.container } : {}),
        ...(inEnvs.length < envNames.length ? { environments: envNames.filter((e) => inEnvs.includes(e)) } : {}),
      });
    }
    if (adopted) {
      // Workloads it lists stay (one may run where discovery could not read); new ones are added.
      const listed = new Set(adopted.spec.workloads.map(workloadKey));
      applications.push({
        apiVersion: API,
        kind: 'Application',
        metadata: { name, namespace: input.namespace },
        spec: {
          ...adopted.spec,
          workloads: [...adopted.spec.workloads, ...refs.filter((r) => !listed.has(workloadKey(r)))],
        },
      } as Application);
      continue;
    }
    applications.push({
      apiVersion: API,
      kind: 'Application',
      metadata: { name, namespace: input.namespace },
      spec: {
        owner: dnsName(owners[0] ?? input.owner),
        type: kinds.has('Rollout')
          ? 'rollout'
          : [...kinds].every((k) => k === 'CronJob' || k === 'Job')
            ? 'job'
            : 'service',
        image: { repository: repo },
        workloads: refs,
      },
    } as Application);
  }

  // 4. Environments: registry, prefix and delivery method.
  const environments: Environment[] = [];
  for (const env of input.environments) {
    const host = hostOf.get(env.name);
    if (!host) continue;
    const mine = uses.filter((u) => u.env === env && appOfRepo.has(stripPrefix(u.repo, prefixOf.get(env.name))));
    const delivery = inferDelivery(
      env,
      mine,
      (u) => appOfRepo.get(stripPrefix(u.repo, prefixOf.get(env.name)))!,
      findings,
    );
    if (delivery.incomplete) incomplete.add(`Environment/${env.name}`);
    const prefix = prefixOf.get(env.name);
    if (isLoopback(host)) note(`Environment ${env.name}`, `registry ${host} is on loopback: insecure (plain http) set`);
    environments.push({
      apiVersion: API,
      kind: 'Environment',
      metadata: { name: env.name, namespace: input.namespace },
      spec: {
        cluster: { context: env.context },
        namespace: env.namespace,
        registry: { host, ...(prefix ? { prefix } : {}), ...(isLoopback(host) ? { insecure: true } : {}) },
        delivery: delivery.delivery,
      },
    } as Environment);
  }

  // 5. The flow, in the order given, over exactly these applications.
  const flow: PromotionFlow | undefined =
    environments.length >= 2 && applications.length
      ? ({
          apiVersion: API,
          kind: 'PromotionFlow',
          metadata: { name: input.flowName ?? 'main', namespace: input.namespace },
          spec: {
            stages: environments.map((e) => ({ environment: e.metadata.name })),
            selector: { applications: applications.map((a) => a.metadata.name) },
          },
        } as PromotionFlow)
      : undefined;
  if (!flow) undecided('PromotionFlow', 'needs at least two environments with adoptable workloads');

  // 6. Idempotence: what exists exactly as proposed is not proposed again.
  const unchanged: string[] = [];
  const updates: string[] = [];
  const keep = <T extends { kind: string; metadata: { name: string }; spec: unknown }>(proposed: T, existing: T[]) => {
    const old = existing.find((e) => e.metadata.name === proposed.metadata.name);
    if (!old) return true;
    if (covers(old.spec, proposed.spec)) {
      unchanged.push(`${proposed.kind}/${proposed.metadata.name}`);
      return false;
    }
    updates.push(`${proposed.kind}/${proposed.metadata.name}`);
    return true;
  };
  const ex = input.existing;
  return {
    applications: applications.filter((a) => keep(a, ex?.applications ?? [])),
    environments: environments.filter((e) => keep(e, ex?.environments ?? [])),
    ...(flow && keep(flow, ex?.flows ?? []) ? { flow } : {}),
    unchanged,
    updates,
    incomplete: [...incomplete],
    findings,
  };
}

const stripPrefix = (repo: string, prefix: string | undefined) =>
  prefix && repo.startsWith(`${prefix}/`) ? repo.slice(prefix.length + 1) : repo;

/** Whether `old` already says everything `proposed` says (defaults the apiserver added do not count). */
function covers(old: unknown, proposed: unknown): boolean {
  if (proposed && typeof proposed === 'object' && !Array.isArray(proposed))
    return (
      !!old &&
      typeof old === 'object' &&
      Object.entries(proposed).every(([k, v]) => covers((old as Record<string, unknown>)[k], v))
    );
  if (Array.isArray(proposed))
    return Array.isArray(old) && old.length === proposed.length && proposed.every((v, i) => covers(old[i], v));
  return isDeepStrictEqual(old, proposed);
}

/** The delivery method of one environment from who manages its adopted workloads. */
function inferDelivery(
  env: FoundEnvironment,
  uses: Use[],
  appOf: (u: Use) => string,
  findings: Finding[],
): { delivery: Environment['spec']['delivery']; incomplete?: boolean } {
  const subject = `Environment ${env.name}`;
  const byHelm = uses.filter((u) => u.w.labels[HELM_NAME]);
  const byKs = uses.filter((u) => !u.w.labels[HELM_NAME] && u.w.labels[KS_NAME]);
  const policies = env.imagePolicies.filter((p) => p.image);
  const scanned = uses.filter((u) => policies.some((p) => p.image === `${u.host}/${u.repo}`));
  const mixed = (method: string, n: number) => {
    if (n < uses.length)
      findings.push({
        level: 'undecided',
        subject,
        message: `${n} of ${uses.length} workloads are managed by ${method}, the others are not: ${method} chosen; the others need an Environment of their own`,
      });
  };
  if (byHelm.length && byHelm.length >= byKs.length) {
    mixed('Flux HelmReleases', byHelm.length);
    const nameIsApp = byHelm.every((u) => u.w.labels[HELM_NAME] === appOf(u));
    const paths = byHelm.map((u) => {
      const hr = env.helmReleases.find((h) => h.name === u.w.labels[HELM_NAME]);
      return u.tag && hr ? findValuePath(hr.values, u.tag) : undefined;
    });
    const digestPaths = byHelm.map((u) => {
      const hr = env.helmReleases.find((h) => h.name === u.w.labels[HELM_NAME]);
      return u.digest && hr ? findValuePath(hr.values, u.digest) : undefined;
    });
    const valuesPath = majority(paths.filter((p): p is string => !!p));
    const digestPath = majority(digestPaths.filter((p): p is string => !!p));
    let incomplete = false;
    if (!nameIsApp) {
      findings.push({
        level: 'undecided',
        subject,
        message:
          'HelmRelease names differ from the Application names: set delivery.helmRelease.name (a {app} template)',
      });
      incomplete = true;
    }
    if (!valuesPath) {
      findings.push({
        level: 'undecided',
        subject,
        message:
          "no values path holds the running tag in the HelmReleases' spec.values: set delivery.helmRelease.valuesPath",
      });
      incomplete = true;
    }
    return {
      delivery: {
        method: 'helmRelease',
        helmRelease: { name: '{app}', valuesPath: valuesPath ?? 'image.tag', ...(digestPath ? { digestPath } : {}) },
      },
      incomplete,
    };
  }
  if (byKs.length) {
    mixed('Flux Kustomizations', byKs.length);
    const ksName = majority(byKs.map((u) => `${u.w.labels[KS_NAMESPACE] ?? 'flux-system'}/${u.w.labels[KS_NAME]}`))!;
    const ks = env.kustomizations.find((k) => `${k.namespace}/${k.name}` === ksName);
    const dir = (ks?.path ?? '.').replace(/^\.?\/*/, '').replace(/\/+$/, '');
    findings.push({
      level: 'undecided',
      subject,
      message: `applied by Flux Kustomization ${ksName}${ks?.git ? ` from ${ks.git.url}` : ''}: check delivery.git.path, the file holding each app's image (proposed ${dir ? `${dir}/` : ''}{app}.yaml), and add credentialsSecretRef`,
    });
    return {
      delivery: {
        method: 'git',
        git: {
          repository: ks?.git?.url ?? 'https://git.example.com/CHANGE-ME.git',
          ...(ks?.git?.branch ? { branch: ks.git.branch } : {}),
          path: `${dir ? `${dir}/` : ''}{app}.yaml`,
          kustomization: { name: ksName.split('/')[1], namespace: ksName.split('/')[0] },
        },
      },
      incomplete: true,
    };
  }
  if (scanned.length) {
    mixed('Flux ImagePolicies', scanned.length);
    const named = scanned.every((u) => policies.some((p) => p.image === `${u.host}/${u.repo}` && p.name === appOf(u)));
    // Where the policies scanning these apps live (other teams' policies elsewhere do not count).
    const ns = majority(
      policies.filter((p) => scanned.some((u) => p.image === `${u.host}/${u.repo}`)).map((p) => p.namespace),
    );
    if (!named)
      findings.push({
        level: 'undecided',
        subject,
        message: 'ImagePolicy names differ from the Application names: set delivery.imagePolicy.name',
      });
    return {
      delivery: { method: 'imagePolicy', imagePolicy: { name: '{app}', ...(ns ? { namespace: ns } : {}) } },
      incomplete: !named,
    };
  }
  return { delivery: { method: 'patch' } };
}

/** The resources of a proposal in apply order (Environments, Applications, then the flow). */
export function proposedResources(p: Proposal): Array<Application | Environment | PromotionFlow> {
  return [...p.environments, ...p.applications, ...(p.flow ? [p.flow] : [])];
}
