import { isDeepStrictEqual } from 'node:util';
import type { Application, Environment, PromotionFlow, WorkloadRef } from '@kpromo/api';
import type { AdoptedContainer, FoundEnvironment, FoundWorkload, InferredDelivery } from '../extension/adoption.js';
import type { DeliveryMethod } from '../extension/deliveryMethod.js';
import type { DeliveryMethods } from '../extension/plugin.js';
import { majority } from '../util/collections.js';
import { parseImageRef } from '../util/imageRef.js';

export type {
  AdoptKind,
  FoundEnvironment,
  FoundHelmRelease,
  FoundImagePolicy,
  FoundKustomization,
  FoundWorkload,
  UnreadReference,
} from '../extension/adoption.js';

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
  /** The delivery methods whose `infer` recognises how an environment's workloads are delivered. */
  deliveryMethods: DeliveryMethods;
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

/** The findings of one proposal, in the order they were made. */
interface Report {
  findings: Finding[];
  note(subject: string, message: string): void;
  undecided(subject: string, message: string): void;
}

function report(): Report {
  const findings: Finding[] = [];
  return {
    findings,
    note: (subject, message) => findings.push({ level: 'note', subject, message }),
    undecided: (subject, message) => findings.push({ level: 'undecided', subject, message }),
  };
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
 * - Delivery: the registered method that recognises most of the environment's workloads, each
 *   method's `infer` (DeliveryInference) judging. The built-ins: `helmRelease` when Flux's
 *   helm-controller manages the workloads (their `helm.toolkit.fluxcd.io/name` label) and the image
 *   tag sits at one values path; `git` when a Flux Kustomization applies them from a GitRepository
 *   (the file to edit is left to review); `imagePolicy` when Flux ImagePolicies scan the apps'
 *   repositories; otherwise `patch`.
 */
export function proposeAdoption(input: AdoptionInput): Proposal {
  const r = report();
  noteUnread(input.environments, r);
  const { uses, hostOf } = containerImages(input.environments, r);
  const prefixOf = registryPrefixes(input.environments, uses);
  const { applications, appOfRepo } = proposeApplications(input, groupByRepository(uses, prefixOf, r), r);
  const { environments, incomplete } = proposeEnvironments(input, { uses, hostOf, prefixOf, appOfRepo }, r);
  const flow = proposeFlow(input, environments, applications, r);
  return {
    ...withoutUnchanged(input.existing, { applications, environments, flow }),
    incomplete,
    findings: r.findings,
  };
}

/** References an Environment names outside its namespace, which adoption through the controller does not read. */
function noteUnread(environments: FoundEnvironment[], r: Report): void {
  for (const env of environments)
    for (const u of env.unread ?? [])
      r.note(
        `${u.kind} ${u.namespace}/${u.name}`,
        `named by ${u.by} in Environment ${env.name}, outside its namespace ${env.namespace}: not read (adoption through the controller reads only the Environment's namespace); fill in what it holds by hand, or run kpromo adopt --env with your own access`,
      );
}

/** 1. Every container image, and each environment's registry (images from another registry are not adopted). */
function containerImages(environments: FoundEnvironment[], r: Report): { uses: Use[]; hostOf: Map<string, string> } {
  const uses: Use[] = [];
  const hostOf = new Map<string, string>();
  for (const env of environments) {
    const mine: Use[] = [];
    for (const w of env.workloads) {
      if (w.ownedBy) {
        r.note(`${w.kind} ${env.name}/${w.name}`, `skipped: created by ${w.ownedBy}`);
        continue;
      }
      for (const c of w.containers) {
        const ref = parseImageRef(c.image);
        mine.push({
          env,
          w,
          container: c.name,
          host: ref.host ?? 'docker.io',
          repo: ref.repository,
          tag: ref.tag,
          digest: ref.digest,
        });
      }
    }
    const host = env.registry?.host ?? majority(mine.map((u) => u.host));
    if (!host || !mine.length) {
      r.undecided(
        `Environment ${env.name}`,
        `no workloads found in namespace ${env.namespace} of context ${env.context}`,
      );
      continue;
    }
    hostOf.set(env.name, host);
    for (const u of mine) {
      if (u.host === host) uses.push(u);
      else
        r.undecided(
          `${u.w.kind} ${env.name}/${u.w.name}`,
          `container ${u.container} runs ${u.host}/${u.repo}, not from ${host} (the registry the other workloads of ${env.name} use): not adopted; promote it from its own registry in an Environment of its own`,
        );
    }
  }
  return { uses, hostOf };
}

/** 2. Each environment's prefix, from the same workload's repository in other environments (or its registry as given). */
function registryPrefixes(environments: FoundEnvironment[], uses: Use[]): Map<string, string> {
  const prefixVotes = new Map<string, string[]>();
  for (const list of groupBy(uses, refKey).values()) {
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
  for (const env of environments) if (env.registry) prefixOf.set(env.name, env.registry.prefix ?? '');
  return prefixOf;
}

/** 3a. The images by repository, without the environment's prefix; one outside the prefix is not adopted. */
function groupByRepository(uses: Use[], prefixOf: Map<string, string>, r: Report): Map<string, Use[]> {
  const groups = new Map<string, Use[]>();
  for (const u of uses) {
    const prefix = prefixOf.get(u.env.name) ?? '';
    if (prefix && !u.repo.startsWith(`${prefix}/`)) {
      r.undecided(
        `${u.w.kind} ${u.env.name}/${u.w.name}`,
        `runs ${u.repo}, which does not start with ${prefix}/ like the other repositories of ${u.env.name}: not adopted`,
      );
      continue;
    }
    const repo = prefix ? u.repo.slice(prefix.length + 1) : u.repo;
    groups.set(repo, [...(groups.get(repo) ?? []), u]);
  }
  return groups;
}

/**
 * 3b. One Application per repository. One that already promotes the repository keeps its name, owner
 * and settings and gains the workloads it does not list yet.
 */
function proposeApplications(
  input: AdoptionInput,
  groups: Map<string, Use[]>,
  r: Report,
): { applications: Application[]; appOfRepo: Map<string, string> } {
  const ownerLabel = input.ownerLabel ?? 'team';
  const envNames = input.environments.map((e) => e.name);
  const taken = new Set<string>();
  const applications: Application[] = [];
  const appOfRepo = new Map<string, string>();
  for (const [repo, list] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    const names = [...new Set(list.map((u) => u.w.name))];
    // An Application that already promotes this repository keeps its name, owner and settings.
    const adopted = input.existing?.applications.find((a) => a.spec.image.repository === repo);
    const name = applicationName(input, repo, list, adopted, taken, r);
    taken.add(name);
    appOfRepo.set(repo, name);
    if (names.length > 1)
      r.note(
        `Application ${name}`,
        `${names.join(', ')} run the same image ${repo}: one Application with ${names.length} workloads (a promotion moves the image for all of them)`,
      );
    const owners = [...new Set(list.map((u) => u.w.labels[ownerLabel]).filter(Boolean))];
    if (owners.length !== 1 && !adopted)
      r.note(
        `Application ${name}`,
        owners.length
          ? `its workloads name several owners (${owners.join(', ')}); owner set to ${owners[0]}`
          : `no workload has label ${ownerLabel}; owner set to ${input.owner}`,
      );
    const kinds = new Set(list.map((u) => u.w.kind));
    const refs = workloadRefs(list, envNames);
    if (adopted) {
      // Workloads it lists stay (one may run where discovery could not read); new ones are added.
      const listed = new Set(adopted.spec.workloads.map(workloadKey));
      applications.push({
        apiVersion: API,
        kind: 'Application',
        metadata: { name, namespace: input.namespace },
        spec: {
          ...adopted.spec,
          workloads: [...adopted.spec.workloads, ...refs.filter((ref) => !listed.has(workloadKey(ref)))],
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
  return { applications, appOfRepo };
}

/**
 * The name of the Application of `repo`: the existing one's, else the workloads' common
 * `app.kubernetes.io/name`, their common name, or the repository's last part; a name taken already
 * (here or by an Application of another repository) becomes the whole repository's.
 */
function applicationName(
  input: AdoptionInput,
  repo: string,
  list: Use[],
  adopted: Application | undefined,
  taken: Set<string>,
  r: Report,
): string {
  const labelled = [...new Set(list.map((u) => u.w.labels[APP_NAME]).filter(Boolean))];
  const names = [...new Set(list.map((u) => u.w.name))];
  const name =
    adopted?.metadata.name ??
    dnsName(labelled.length === 1 ? labelled[0] : names.length === 1 ? names[0] : repo.split('/').at(-1)!);
  const clash = (n: string) =>
    taken.has(n) || !!input.existing?.applications.some((a) => a.metadata.name === n && a !== adopted);
  if (!clash(name)) return name;
  const alt = dnsName(repo.replace(/\//g, '-'));
  r.undecided(
    `Application ${name}`,
    `${taken.has(name) ? 'two repositories would both be named' : 'an Application promoting another repository is named'} ${name}; ${repo} is named ${alt}`,
  );
  return alt;
}

/** An Application's workloads: one per workload container, with the environments it runs in unless all. */
function workloadRefs(list: Use[], envNames: string[]): WorkloadRef[] {
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
  return refs;
}

/** 4. Environments: registry, prefix and delivery method; `incomplete` lists those to finish by hand. */
function proposeEnvironments(
  input: AdoptionInput,
  found: { uses: Use[]; hostOf: Map<string, string>; prefixOf: Map<string, string>; appOfRepo: Map<string, string> },
  r: Report,
): { environments: Environment[]; incomplete: string[] } {
  const { uses, hostOf, prefixOf, appOfRepo } = found;
  const environments: Environment[] = [];
  const incomplete = new Set<string>();
  for (const env of input.environments) {
    const host = hostOf.get(env.name);
    if (!host) continue;
    const containers = uses.flatMap((u): AdoptedContainer[] => {
      const application = u.env === env ? appOfRepo.get(stripPrefix(u.repo, prefixOf.get(env.name))) : undefined;
      return application
        ? [
            {
              workload: u.w,
              container: u.container,
              host: u.host,
              repository: u.repo,
              tag: u.tag,
              digest: u.digest,
              application,
            },
          ]
        : [];
    });
    const delivery = inferDelivery(input.deliveryMethods, env, containers, r.findings);
    if (!delivery) continue;
    if (delivery.incomplete) incomplete.add(`Environment/${env.name}`);
    const prefix = prefixOf.get(env.name);
    if (isLoopback(host))
      r.note(`Environment ${env.name}`, `registry ${host} is on loopback: insecure (plain http) set`);
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
  return { environments, incomplete: [...incomplete] };
}

/** 5. The flow, in the order given, over exactly these applications. */
function proposeFlow(
  input: AdoptionInput,
  environments: Environment[],
  applications: Application[],
  r: Report,
): PromotionFlow | undefined {
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
  if (!flow) r.undecided('PromotionFlow', 'needs at least two environments with adoptable workloads');
  return flow;
}

/** 6. Idempotence: what exists exactly as proposed is not proposed again. */
function withoutUnchanged(
  existing: AdoptionInput['existing'],
  proposed: { applications: Application[]; environments: Environment[]; flow?: PromotionFlow },
): Pick<Proposal, 'applications' | 'environments' | 'flow' | 'unchanged' | 'updates'> {
  const unchanged: string[] = [];
  const updates: string[] = [];
  const keep = <T extends { kind: string; metadata: { name: string }; spec: unknown }>(p: T, existingOfKind: T[]) => {
    const old = existingOfKind.find((e) => e.metadata.name === p.metadata.name);
    if (!old) return true;
    if (covers(old.spec, p.spec)) {
      unchanged.push(`${p.kind}/${p.metadata.name}`);
      return false;
    }
    updates.push(`${p.kind}/${p.metadata.name}`);
    return true;
  };
  const { flow } = proposed;
  return {
    applications: proposed.applications.filter((a) => keep(a, existing?.applications ?? [])),
    environments: proposed.environments.filter((e) => keep(e, existing?.environments ?? [])),
    ...(flow && keep(flow, existing?.flows ?? []) ? { flow } : {}),
    unchanged,
    updates,
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

/** Strongest first: the order in which methods claim containers and win an environment. */
const EVIDENCE = ['manages', 'scans', 'fallback'] as const;

/**
 * The delivery of one environment (DeliveryInference): each container goes to the first method
 * that recognises it, strongest evidence first and then in registry order; the method with the most
 * containers in the strongest evidence found wins (a tie: the earlier registered; a `fallback`
 * method even with none) and proposes the settings. Undefined when no method can (no fallback).
 */
function inferDelivery(
  methods: DeliveryMethods,
  env: FoundEnvironment,
  containers: AdoptedContainer[],
  findings: Finding[],
): InferredDelivery | undefined {
  const subject = `Environment ${env.name}`;
  const inferring = EVIDENCE.flatMap((evidence) => [...methods.values()].filter((m) => m.infer?.evidence === evidence));
  const won = new Map<DeliveryMethod, AdoptedContainer[]>();
  for (const c of containers) {
    const m = inferring.find((x) => x.infer!.recognises(c, env));
    if (m) won.set(m, [...(won.get(m) ?? []), c]);
  }
  const count = (m: DeliveryMethod) => won.get(m)?.length ?? 0;
  for (const evidence of EVIDENCE) {
    const best = inferring
      .filter((m) => m.infer!.evidence === evidence && (evidence === 'fallback' || count(m) > 0))
      .reduce<DeliveryMethod | undefined>((b, m) => (!b || count(m) > count(b) ? m : b), undefined);
    if (!best) continue;
    const { by } = best.infer!;
    if (count(best) < containers.length)
      findings.push({
        level: 'undecided',
        subject,
        message: `${count(best)} of ${containers.length} workloads are managed by ${by}, the others are not: ${by} chosen; the others need an Environment of their own`,
      });
    const r = best.infer!.propose({ found: env, containers: won.get(best) ?? [] });
    for (const message of r.undecided ?? []) findings.push({ level: 'undecided', subject, message });
    return r;
  }
  findings.push({
    level: 'undecided',
    subject,
    message: `no registered delivery method recognises how its workloads are delivered (registered: ${[...methods.keys()].join(', ')}): not proposed`,
  });
  return undefined;
}

/** The resources of a proposal in apply order (Environments, Applications, then the flow). */
export function proposedResources(p: Proposal): Array<Application | Environment | PromotionFlow> {
  return [...p.environments, ...p.applications, ...(p.flow ? [p.flow] : [])];
}
