import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { openApiRoutes, type Route } from '../openapi/routes.js';

/**
 * A GitHub stand-in: a real HTTP server that checks every request and every response it sends
 * against GitHub's published OpenAPI description of api.github.com (npm `@octokit/openapi`,
 * `generated/api.github.com.json`, OpenAPI 3.0, API version 2022-11-28). A request that matches
 * no operation of the description is refused (404) and recorded; path and query parameters and
 * the JSON body are validated against the operation; every answer is validated against the
 * operation's response schema for that status. Problems are collected in `violations`; tests
 * assert it stays empty.
 *
 * State is in memory: repositories with branches (head commit per branch, set by tests), pull
 * requests, reviews (added by tests as other users), commit statuses. Tokens map to logins.
 *
 * What it models of GitHub's behaviour, and no more: the pulls list filters (`state`, `head` as
 * `owner:branch`, `base`) and pagination (`per_page` ≤ 100, `page`, Link header); GitHub's 422s
 * for a second open pull request of the same head and base, a missing branch and no commits
 * between them; a status description over 140 characters; PENDING reviews seen only by their
 * author; and two refusals of a merge: 409 when `sha` is not the head, 405 when the pull request
 * is not mergeable (closed, or fewer approvals than `requiredApprovals`). That count is the only
 * part of branch protection a merge obeys: required status checks, code owners, dismissal of stale
 * approvals, push restrictions, rulesets and merge queues are not, and neither are conflicts.
 * Branch protection and rulesets as a test sets them (`protectBranch`, `addRuleset`) are only read
 * back: GET …/branches/{branch}/protection answers the rule, 404 "Branch not protected" without
 * one, and 403 to a token whose login is not among the repository's `admins` when the test lists
 * them (reading it needs the Administration permission); GET …/rules/branches/{branch} answers the
 * pull_request and required_status_checks rules of the repository's rulesets whose branch names
 * include it (exact names: fnmatch patterns, exclusions and organization rulesets are not modelled),
 * to any reader.
 */
type Json = Record<string, unknown>;
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Json;
}
interface Operation {
  parameters?: Array<Parameter | { $ref: string }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Json }> };
  responses: Record<string, { $ref?: string; content?: Record<string, { schema?: Json }> }>;
}

/** The API version the description describes (later versions are patches in `x-github-breaking-changes`). */
export const GITHUB_API_VERSION = '2022-11-28';

export interface GitHubFault {
  /** Matches `${METHOD} ${path}`; default: any call. */
  match?: RegExp;
  /** GitHub's answers on any route: 301 (a renamed repository), 403/429 (rate limit), 5xx. */
  status: 301 | 403 | 429 | 500 | 502 | 503;
  times: number;
  headers?: Record<string, string>;
}

export interface StandInReview {
  id: number;
  user: string;
  state: 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED' | 'PENDING';
  commit: string;
  body: string;
  submittedAt: string;
}

export interface StandInPull {
  number: number;
  id: number;
  title: string;
  body: string | null;
  head: string;
  base: string;
  state: 'open' | 'closed';
  author: string;
  createdAt: string;
  updatedAt: string;
  closedAt?: string;
  /** Head commit when closed or merged (an open pull request follows its branch). */
  frozenHead?: string;
  merged?: { by: string; sha: string; at: string };
  reviews: StandInReview[];
}

export interface StandInStatus {
  id: number;
  state: string;
  context: string;
  description: string | null;
  targetUrl: string | null;
  creator: string;
  createdAt: string;
}

export interface StandInRepo {
  owner: string;
  name: string;
  defaultBranch: string;
  /** Branch → head commit. Tests move them with `setBranch`. */
  branches: Map<string, string>;
  /** Every commit a branch ever pointed at (statuses need a known commit). */
  commits: Set<string>;
  pulls: StandInPull[];
  statuses: Map<string, StandInStatus[]>;
  /** Approvals (latest review per reviewer, not the author's) a merge into any branch needs. */
  requiredApprovals: number;
  /** Branch → its protection as GitHub reports it (read back only: merges obey `requiredApprovals`). */
  protections: Map<string, StandInProtection>;
  /** Logins that may read branch protection (undefined: every token). */
  admins?: Set<string>;
  rulesets: StandInRuleset[];
}

/** An active repository ruleset: the parts of its pull_request and required_status_checks rules a test sets. */
export interface StandInRuleset {
  id: number;
  /** Branch names it applies to (exact). */
  branches: string[];
  /** A pull_request rule with this many required approvals; undefined: no such rule. */
  requiredApprovals?: number;
  dismissStaleReviewsOnPush?: boolean;
  /** A required_status_checks rule; undefined: no such rule. */
  statusContexts?: string[];
}

/** The parts of GitHub's classic branch protection a test sets. */
export interface StandInProtection {
  /** Required approving reviews; undefined: no required pull request reviews. */
  requiredApprovals?: number;
  dismissStaleReviews?: boolean;
  /** Required status check contexts; undefined: no required status checks. */
  statusContexts?: string[];
  enforceAdmins?: boolean;
}

const require = createRequire(import.meta.url);
let cached: { spec: { paths: Record<string, Record<string, Operation>>; components: Json }; ajv: Ajv } | undefined;

/** The description is 13 MB: parsed once per process; validators compiled only for the operations called. */
function loadSpec() {
  if (cached) return cached;
  const spec = JSON.parse(readFileSync(require.resolve('@octokit/openapi/generated/api.github.com.json'), 'utf8'));
  // OpenAPI 3.0 schemas: Ajv's draft-07 plus its `nullable` support; the description is not a JSON
  // schema itself, so it is not checked against a meta-schema.
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, logger: false });
  addFormats(ajv);
  ajv.addSchema(spec, 'github');
  cached = { spec, ajv };
  return cached;
}

const ptr = (...parts: string[]) => parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
const DOCS = 'https://docs.github.com/rest';
/** Statuses GitHub answers on any route, documented or not; their body is a `basic-error`. */
const ANY_ROUTE = new Set([301, 401, 403, 404, 429, 500, 502, 503]);

export class GitHubStandIn {
  readonly repos = new Map<string, StandInRepo>();
  readonly violations: string[] = [];
  /** Every call answered; headers are the ones kpromo must send (never the token). */
  readonly calls: Array<{
    method: string;
    path: string;
    status: number;
    query: Record<string, string>;
    apiVersion?: string;
    accept?: string;
  }> = [];
  faults: GitHubFault[] = [];
  /**
   * For tests of the stand-in itself: changes an answer's body after the stand-in built it and
   * before it is validated and sent (a stand-in that answers wrongly must record a violation).
   */
  tamper?: (call: string, status: number, body: unknown) => unknown;
  url = '';
  private readonly tokens: Map<string, string>;
  private readonly userIds = new Map<string, number>();
  private readonly routes: Array<Route<Operation>>;
  private readonly validators = new Map<string, ValidateFunction | null>();
  private server?: Server;
  private seq = 1000;

  /** `tokens`: token → login of the user it acts as. */
  constructor(tokens: Record<string, string> = { 'kpromo-token': 'kpromo-bot' }) {
    this.tokens = new Map(Object.entries(tokens));
    this.routes = openApiRoutes<Operation>(loadSpec().spec.paths);
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  addRepo(
    owner: string,
    name: string,
    o: {
      branches?: Record<string, string>;
      requiredApprovals?: number;
      defaultBranch?: string;
      /** Logins that may read branch protection (default: every token). */
      admins?: string[];
    } = {},
  ): StandInRepo {
    const branches = o.branches ?? { main: sha('main') };
    const repo: StandInRepo = {
      owner,
      name,
      defaultBranch: o.defaultBranch ?? Object.keys(branches)[0] ?? 'main',
      branches: new Map(Object.entries(branches)),
      commits: new Set(Object.values(branches)),
      pulls: [],
      statuses: new Map(),
      requiredApprovals: o.requiredApprovals ?? 0,
      protections: new Map(),
      rulesets: [],
      ...(o.admins ? { admins: new Set(o.admins) } : {}),
    };
    this.repos.set(`${owner}/${name}`, repo);
    return repo;
  }

  /** Points `branch` at `commit` (a push); an open pull request from it now has that head. */
  setBranch(owner: string, name: string, branch: string, commit: string): void {
    const repo = this.repo(owner, name);
    repo.branches.set(branch, commit);
    repo.commits.add(commit);
  }

  /** Sets `branch`'s protection as an admin would in GitHub's settings (undefined: removes it). */
  protectBranch(owner: string, name: string, branch: string, p: StandInProtection | undefined): void {
    const repo = this.repo(owner, name);
    if (p) repo.protections.set(branch, p);
    else repo.protections.delete(branch);
  }

  /** Adds an active ruleset of the repository (as an admin would in its settings). */
  addRuleset(owner: string, name: string, r: Omit<StandInRuleset, 'id'>): StandInRuleset {
    const ruleset = { id: ++this.seq, ...r };
    this.repo(owner, name).rulesets.push(ruleset);
    return ruleset;
  }

  /** A pull request someone else opened (no request: the state GitHub would have after their POST). */
  openPull(
    owner: string,
    name: string,
    o: { head: string; base: string; title: string; body?: string; author: string },
  ): StandInPull {
    const repo = this.repo(owner, name);
    const at = now();
    const pr: StandInPull = {
      number: repo.pulls.length + 1,
      id: ++this.seq,
      title: o.title,
      body: o.body ?? null,
      head: o.head,
      base: o.base,
      state: 'open',
      author: o.author,
      createdAt: at,
      updatedAt: at,
      reviews: [],
    };
    repo.pulls.push(pr);
    return pr;
  }

  pull(owner: string, name: string, number: number): StandInPull {
    const pr = this.repo(owner, name).pulls.find((p) => p.number === number);
    if (!pr) throw new Error(`stand-in: no pull request ${owner}/${name}#${number}`);
    return pr;
  }

  /** A review by `user` (anyone, not only token holders), on the current head unless `commit` is given. */
  addReview(
    owner: string,
    name: string,
    number: number,
    r: { user: string; state: StandInReview['state']; commit?: string; body?: string },
  ): StandInReview {
    const repo = this.repo(owner, name);
    const pr = this.pull(owner, name, number);
    const review: StandInReview = {
      id: ++this.seq,
      user: r.user,
      state: r.state,
      commit: r.commit ?? this.headOf(repo, pr),
      body: r.body ?? '',
      submittedAt: now(),
    };
    pr.reviews.push(review);
    return review;
  }

  callCount(re?: RegExp): number {
    return this.calls.filter((c) => !re || re.test(`${c.method} ${c.path}`)).length;
  }

  private repo(owner: string, name: string): StandInRepo {
    const repo = this.repos.get(`${owner}/${name}`);
    if (!repo) throw new Error(`stand-in: no repository ${owner}/${name}`);
    return repo;
  }

  private headOf(repo: StandInRepo, pr: StandInPull): string {
    return pr.frozenHead ?? repo.branches.get(pr.head) ?? '0'.repeat(40);
  }

  /** A `$ref` of the description resolved (parameters and responses are often references). */
  private deref<T>(x: T | { $ref: string }): T {
    let v: unknown = x;
    while (v && typeof v === 'object' && '$ref' in v && typeof v.$ref === 'string') {
      let cur: unknown = loadSpec().spec;
      for (const part of v.$ref.replace(/^#\//, '').split('/'))
        cur = (cur as Json)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
      v = cur;
    }
    return v as T;
  }

  /** Compiled once per schema location, on first use. */
  private validate(pointer: string, value: unknown, what: string): boolean {
    let v = this.validators.get(pointer);
    if (v === undefined) {
      try {
        v = loadSpec().ajv.getSchema(`github#/${pointer}`) ?? null;
      } catch (e) {
        this.violations.push(`${what}: schema at ${pointer} does not compile: ${(e as Error).message}`);
        v = null;
      }
      this.validators.set(pointer, v);
    }
    if (!v) {
      this.violations.push(`${what}: no schema at ${pointer}`);
      return false;
    }
    if (v(value)) return true;
    this.violations.push(`${what}: ${loadSpec().ajv.errorsText(v.errors)}`);
    return false;
  }

  /** Where the JSON schema of `route`'s answer with `status` is, if the description documents one. */
  private responseSchema(route: Route<Operation>, status: number): string | undefined {
    const raw = route.op.responses[String(status)];
    if (!raw) return undefined;
    const base = raw.$ref
      ? raw.$ref.replace(/^#\//, '')
      : ptr('paths', route.template, route.method.toLowerCase(), 'responses', String(status));
    return this.deref(raw).content?.['application/json']?.schema
      ? `${base}/${ptr('content', 'application/json', 'schema')}`
      : undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://x');
    const method = req.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const route = this.routes.find((r) => r.method === method && r.re.test(url.pathname));
    const send = (status: number, built: unknown, headers: Record<string, string> = {}) => {
      const body = this.tamper ? this.tamper(`${method} ${route?.template ?? url.pathname}`, status, built) : built;
      this.calls.push({
        method,
        path: url.pathname,
        status,
        query: Object.fromEntries(url.searchParams),
        apiVersion: req.headers['x-github-api-version'] as string | undefined,
        accept: req.headers.accept,
      });
      const what = `response ${status} ${method} ${url.pathname}`;
      const schema = route && this.responseSchema(route, status);
      if (schema) this.validate(schema, body, what);
      else if (ANY_ROUTE.has(status)) this.validate('components/schemas/basic-error', body, what);
      // GitHub answers 422 "Validation Failed" to writes whose description lists no 422 (statuses).
      else if (status === 422 && method !== 'GET') this.validate('components/schemas/validation-error', body, what);
      else if (status !== 204) this.violations.push(`${what}: status ${status} is not documented for this operation`);
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'x-github-api-version-selected': GITHUB_API_VERSION,
        ...headers,
      });
      res.end(status === 204 ? undefined : JSON.stringify(body));
    };
    const error = (status: number, message: string, extra: Json = {}) =>
      send(status, { message, documentation_url: DOCS, status: String(status), ...extra });
    if (!route) {
      this.violations.push(`request ${method} ${url.pathname} matches no operation in GitHub's description`);
      return error(404, 'Not Found');
    }
    const version = req.headers['x-github-api-version'];
    if (version !== undefined && version !== GITHUB_API_VERSION) {
      this.violations.push(`request ${method} ${url.pathname}: X-GitHub-Api-Version ${version} is not modelled`);
      return send(400, { message: `API version ${version} is not supported.`, documentation_url: DOCS });
    }

    // Request validation: path and query parameters, then the body.
    const op = route.op;
    const lower = route.method.toLowerCase();
    const match = route.re.exec(url.pathname)!;
    const params: Record<string, string> = {};
    route.names.forEach((n, i) => {
      params[n] = decodeURIComponent(match[i + 1]);
    });
    const problems: string[] = [];
    const declared = (op.parameters ?? []).map((p) => this.deref<Parameter>(p));
    for (const name of url.searchParams.keys())
      if (!declared.some((p) => p.in === 'query' && p.name === name))
        problems.push(`query parameter ${name} is not in the description`);
    declared.forEach((p, idx) => {
      if (p.in !== 'path' && p.in !== 'query') return;
      const value = p.in === 'path' ? params[p.name] : url.searchParams.get(p.name);
      if (value == null) {
        if (p.required) problems.push(`missing required ${p.in} parameter ${p.name}`);
        return;
      }
      const type = p.schema?.type;
      const coerced =
        type === 'integer' || type === 'number'
          ? /^-?\d+(\.\d+)?$/.test(value)
            ? Number(value)
            : value
          : type === 'boolean'
            ? value === 'true'
              ? true
              : value === 'false'
                ? false
                : value
            : value;
      const raw = op.parameters![idx];
      const at =
        '$ref' in raw
          ? `${raw.$ref.replace(/^#\//, '')}/schema`
          : ptr('paths', route.template, lower, 'parameters', String(idx), 'schema');
      if (!this.validate(at, coerced, `${p.in} parameter ${p.name} of ${method} ${route.template}`))
        problems.push(`bad ${p.in} parameter ${p.name}`);
    });
    let body: unknown;
    if (raw.length) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        problems.push('body is not JSON');
      }
    }
    const hasBodySchema = !!op.requestBody?.content?.['application/json']?.schema;
    if (body !== undefined && !hasBodySchema) problems.push('the operation takes no JSON body');
    if (hasBodySchema && (body !== undefined || op.requestBody?.required)) {
      if (
        !this.validate(
          ptr('paths', route.template, lower, 'requestBody', 'content', 'application/json', 'schema'),
          body,
          `request ${method} ${route.template}`,
        )
      )
        problems.push('body does not match the description');
    }
    if (problems.length) {
      this.violations.push(`request ${method} ${url.pathname}: ${problems.join('; ')}`);
      // GitHub's validation answer; a route that does not document 422 records one more violation.
      return error(422, 'Validation Failed');
    }

    const fault = this.faults.find((f) => f.times > 0 && (!f.match || f.match.test(`${method} ${url.pathname}`)));
    if (fault) {
      fault.times--;
      const message =
        fault.status === 301
          ? 'Moved Permanently'
          : fault.status === 403 || fault.status === 429
            ? 'API rate limit exceeded'
            : 'Server Error';
      return send(fault.status, { message, documentation_url: DOCS, status: String(fault.status) }, fault.headers);
    }
    const token = /^(?:Bearer|token) (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const login = token && this.tokens.get(token);
    if (!login) return error(401, 'Bad credentials');
    this.route(
      `${method} ${route.template}`,
      params,
      url.pathname,
      url.searchParams,
      body as Json | undefined,
      login,
      send,
      error,
    );
  }

  private route(
    call: string,
    p: Record<string, string>,
    path: string,
    query: URLSearchParams,
    body: Json | undefined,
    login: string,
    send: (status: number, body: unknown, headers?: Record<string, string>) => void,
    error: (status: number, message: string, extra?: Json) => void,
  ) {
    if (call === 'GET /user') return send(200, this.publicUser(login));
    const repo = p.owner && this.repos.get(`${p.owner}/${p.repo}`);
    if (!repo) return error(404, 'Not Found');
    const pr = p.pull_number ? repo.pulls.find((x) => x.number === Number(p.pull_number)) : undefined;
    if (p.pull_number && !pr) return error(404, 'Not Found');
    const invalid = (resource: string, field: string, code: string, message?: string) =>
      error(422, 'Validation Failed', { errors: [{ resource, field, code, ...(message ? { message } : {}) }] });
    switch (call) {
      case 'GET /repos/{owner}/{repo}/pulls': {
        const state = query.get('state') ?? 'open';
        // GitHub reads `head` only as `owner:branch`; a bare branch name filters nothing.
        const head = query.get('head')?.split(':');
        const base = query.get('base');
        const all = repo.pulls
          .filter((x) => state === 'all' || x.state === state)
          .filter((x) => head?.length !== 2 || (head[0] === repo.owner && head[1] === x.head))
          .filter((x) => !base || x.base === base)
          .sort((a, b) => b.number - a.number);
        return this.page(
          all.map((x) => this.pullJson(repo, x, false)),
          path,
          query,
          send,
        );
      }
      case 'POST /repos/{owner}/{repo}/pulls': {
        const b = body as { title?: string; head: string; base: string; body?: string };
        const head = b.head.includes(':') ? b.head.split(':') : [repo.owner, b.head];
        if (head[0] !== repo.owner || !repo.branches.has(head[1])) return invalid('PullRequest', 'head', 'invalid');
        if (!repo.branches.has(b.base)) return invalid('PullRequest', 'base', 'invalid');
        if (!b.title) return invalid('PullRequest', 'title', 'missing_field');
        if (repo.pulls.some((x) => x.state === 'open' && x.head === head[1] && x.base === b.base))
          return invalid(
            'PullRequest',
            'head',
            'custom',
            `A pull request already exists for ${repo.owner}:${head[1]}.`,
          );
        if (repo.branches.get(head[1]) === repo.branches.get(b.base))
          return invalid('PullRequest', 'head', 'custom', `No commits between ${b.base} and ${head[1]}`);
        const created = this.openPull(repo.owner, repo.name, { ...b, title: b.title, head: head[1], author: login });
        return send(201, this.pullJson(repo, created, true), {
          location: `${this.url}/repos/${repo.owner}/${repo.name}/pulls/${created.number}`,
        });
      }
      case 'GET /repos/{owner}/{repo}/pulls/{pull_number}':
        return send(200, this.pullJson(repo, pr!, true));
      case 'PATCH /repos/{owner}/{repo}/pulls/{pull_number}': {
        const b = (body ?? {}) as { title?: string; body?: string; state?: 'open' | 'closed'; base?: string };
        if (b.base !== undefined && !repo.branches.has(b.base)) return invalid('PullRequest', 'base', 'invalid');
        if (b.state === 'open' && pr!.merged) return invalid('PullRequest', 'state', 'invalid');
        if (b.title !== undefined) pr!.title = b.title;
        if (b.body !== undefined) pr!.body = b.body;
        if (b.base !== undefined) pr!.base = b.base;
        if (b.state && b.state !== pr!.state) {
          if (b.state === 'closed') {
            pr!.frozenHead = this.headOf(repo, pr!);
            pr!.closedAt = now();
          } else {
            pr!.frozenHead = undefined;
            pr!.closedAt = undefined;
          }
          pr!.state = b.state;
        }
        pr!.updatedAt = now();
        return send(200, this.pullJson(repo, pr!, true));
      }
      case 'GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews':
        return this.page(
          pr!.reviews
            // A pending review is a draft: only its author sees it.
            .filter((r) => r.state !== 'PENDING' || r.user === login)
            .map((r) => this.reviewJson(repo, pr!, r)),
          path,
          query,
          send,
        );
      case 'POST /repos/{owner}/{repo}/statuses/{sha}': {
        const b = body as { state: string; target_url?: string | null; description?: string | null; context?: string };
        if (!repo.commits.has(p.sha)) return invalid('Status', 'sha', 'custom', `No commit found for SHA: ${p.sha}`);
        if ((b.description ?? '').length > 140)
          return invalid('Status', 'description', 'custom', 'description is too long (maximum is 140 characters)');
        const status: StandInStatus = {
          id: ++this.seq,
          state: b.state,
          context: b.context ?? 'default',
          description: b.description ?? null,
          targetUrl: b.target_url ?? null,
          creator: login,
          createdAt: now(),
        };
        repo.statuses.set(p.sha, [...(repo.statuses.get(p.sha) ?? []), status]);
        return send(201, this.statusJson(repo, p.sha, status), {
          location: `${this.url}/repos/${repo.owner}/${repo.name}/statuses/${p.sha}`,
        });
      }
      case 'PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge': {
        const b = (body ?? {}) as { sha?: string; commit_title?: string; commit_message?: string };
        const x = pr!;
        const headSha = this.headOf(repo, x);
        if (x.state !== 'open') return send(405, { message: 'Pull Request is not mergeable', documentation_url: DOCS });
        if (b.sha !== undefined && b.sha !== headSha)
          return send(409, {
            message: 'Head branch was modified. Review and try the merge again.',
            documentation_url: DOCS,
          });
        const need = repo.requiredApprovals;
        if (need > 0 && this.approvals(x) < need)
          return send(405, {
            message: `At least ${need} approving review${need === 1 ? ' is' : 's are'} required by reviewers with write access.`,
            documentation_url: 'https://docs.github.com/articles/about-protected-branches',
          });
        const merge = sha(`merge ${repo.owner}/${repo.name}#${x.number} ${headSha} ${b.commit_title ?? ''}`);
        repo.branches.set(x.base, merge);
        repo.commits.add(merge);
        x.frozenHead = headSha;
        x.state = 'closed';
        x.closedAt = now();
        x.updatedAt = x.closedAt;
        x.merged = { by: login, sha: merge, at: x.closedAt };
        return send(200, { sha: merge, merged: true, message: 'Pull Request successfully merged' });
      }
      case 'GET /repos/{owner}/{repo}/branches/{branch}/protection': {
        if (!repo.branches.has(p.branch)) return error(404, 'Branch not found');
        if (repo.admins && !repo.admins.has(login))
          return error(403, 'Resource not accessible by personal access token');
        const prot = repo.protections.get(p.branch);
        if (!prot) return error(404, 'Branch not protected');
        return send(200, this.protectionJson(repo, p.branch, prot));
      }
      case 'GET /repos/{owner}/{repo}/rules/branches/{branch}': {
        const source = { ruleset_source_type: 'Repository', ruleset_source: `${repo.owner}/${repo.name}` };
        const rules = repo.rulesets
          .filter((r) => r.branches.includes(p.branch))
          .flatMap((r) => [
            ...(r.requiredApprovals !== undefined
              ? [
                  {
                    type: 'pull_request',
                    parameters: {
                      dismiss_stale_reviews_on_push: r.dismissStaleReviewsOnPush ?? false,
                      require_code_owner_review: false,
                      require_last_push_approval: false,
                      required_approving_review_count: r.requiredApprovals,
                      required_review_thread_resolution: false,
                    },
                    ...source,
                    ruleset_id: r.id,
                  },
                ]
              : []),
            ...(r.statusContexts
              ? [
                  {
                    type: 'required_status_checks',
                    parameters: {
                      required_status_checks: r.statusContexts.map((context) => ({ context })),
                      strict_required_status_checks_policy: false,
                    },
                    ...source,
                    ruleset_id: r.id,
                  },
                ]
              : []),
          ]);
        return this.page(rules, path, query, send);
      }
      default:
        this.violations.push(`stand-in does not implement ${call}`);
        return error(404, 'Not Found');
    }
  }

  /** Reviewers (not the author) whose latest approving-or-blocking review approves. */
  private approvals(pr: StandInPull): number {
    const latest = new Map<string, string>();
    for (const r of pr.reviews)
      if (
        r.user !== pr.author &&
        (r.state === 'APPROVED' || r.state === 'CHANGES_REQUESTED' || r.state === 'DISMISSED')
      )
        latest.set(r.user, r.state);
    return [...latest.values()].filter((s) => s === 'APPROVED').length;
  }

  /** `per_page` (default 30, at most 100) and `page`, with GitHub's Link header. */
  private page(
    items: unknown[],
    path: string,
    query: URLSearchParams,
    send: (status: number, body: unknown, headers?: Record<string, string>) => void,
  ) {
    const perPage = Math.min(Math.max(Number(query.get('per_page') ?? 30), 1), 100);
    const page = Math.max(Number(query.get('page') ?? 1), 1);
    const last = Math.max(Math.ceil(items.length / perPage), 1);
    const link = (n: number, rel: string) => {
      const q = new URLSearchParams(query);
      q.set('per_page', String(perPage));
      q.set('page', String(n));
      return `<${this.url}${path}?${q}>; rel="${rel}"`;
    };
    const rels = [
      ...(page < last ? [link(page + 1, 'next'), link(last, 'last')] : []),
      ...(page > 1 ? [link(1, 'first'), link(page - 1, 'prev')] : []),
    ];
    send(200, items.slice((page - 1) * perPage, page * perPage), rels.length ? { link: rels.join(', ') } : {});
  }

  private userId(login: string): number {
    let id = this.userIds.get(login);
    if (!id) {
      id = 100 + this.userIds.size;
      this.userIds.set(login, id);
    }
    return id;
  }

  /** `simple-user`. */
  private user(login: string): Json {
    const api = `${this.url}/users/${login}`;
    return {
      login,
      id: this.userId(login),
      node_id: `U_${this.userId(login)}`,
      avatar_url: `${this.url}/avatars/${login}`,
      gravatar_id: '',
      url: api,
      html_url: `${this.url}/${login}`,
      followers_url: `${api}/followers`,
      following_url: `${api}/following{/other_user}`,
      gists_url: `${api}/gists{/gist_id}`,
      starred_url: `${api}/starred{/owner}{/repo}`,
      subscriptions_url: `${api}/subscriptions`,
      organizations_url: `${api}/orgs`,
      repos_url: `${api}/repos`,
      events_url: `${api}/events{/privacy}`,
      received_events_url: `${api}/received_events`,
      type: 'User',
      site_admin: false,
      user_view_type: 'public',
    };
  }

  /**
   * GET /user answers `private-user` or `public-user` (a oneOf with a discriminator Ajv does not
   * apply): the public view, which GitHub gives a token without the profile permission, matches
   * exactly one of the two.
   */
  private publicUser(login: string): Json {
    return {
      ...this.user(login),
      name: null,
      company: null,
      blog: null,
      location: null,
      email: null,
      hireable: null,
      bio: null,
      public_repos: 0,
      public_gists: 0,
      followers: 0,
      following: 0,
      created_at: '2020-01-01T00:00:00Z',
      updated_at: '2020-01-01T00:00:00Z',
    };
  }

  /** `repository`. */
  private repoJson(repo: StandInRepo): Json {
    const full = `${repo.owner}/${repo.name}`;
    const api = `${this.url}/repos/${full}`;
    const id = Number.parseInt(sha(full).slice(0, 8), 16);
    return {
      id,
      node_id: `R_${id}`,
      name: repo.name,
      full_name: full,
      owner: this.user(repo.owner),
      private: true,
      html_url: `${this.url}/${full}`,
      description: null,
      fork: false,
      url: api,
      archive_url: `${api}/{archive_format}{/ref}`,
      assignees_url: `${api}/assignees{/user}`,
      blobs_url: `${api}/git/blobs{/sha}`,
      branches_url: `${api}/branches{/branch}`,
      collaborators_url: `${api}/collaborators{/collaborator}`,
      comments_url: `${api}/comments{/number}`,
      commits_url: `${api}/commits{/sha}`,
      compare_url: `${api}/compare/{base}...{head}`,
      contents_url: `${api}/contents/{+path}`,
      contributors_url: `${api}/contributors`,
      deployments_url: `${api}/deployments`,
      downloads_url: `${api}/downloads`,
      events_url: `${api}/events`,
      forks_url: `${api}/forks`,
      git_commits_url: `${api}/git/commits{/sha}`,
      git_refs_url: `${api}/git/refs{/sha}`,
      git_tags_url: `${api}/git/tags{/sha}`,
      git_url: `git://127.0.0.1/${full}.git`,
      issue_comment_url: `${api}/issues/comments{/number}`,
      issue_events_url: `${api}/issues/events{/number}`,
      issues_url: `${api}/issues{/number}`,
      keys_url: `${api}/keys{/key_id}`,
      labels_url: `${api}/labels{/name}`,
      languages_url: `${api}/languages`,
      merges_url: `${api}/merges`,
      milestones_url: `${api}/milestones{/number}`,
      notifications_url: `${api}/notifications{?since,all,participating}`,
      pulls_url: `${api}/pulls{/number}`,
      releases_url: `${api}/releases{/id}`,
      ssh_url: `git@127.0.0.1:${full}.git`,
      stargazers_url: `${api}/stargazers`,
      statuses_url: `${api}/statuses/{sha}`,
      subscribers_url: `${api}/subscribers`,
      subscription_url: `${api}/subscription`,
      tags_url: `${api}/tags`,
      teams_url: `${api}/teams`,
      trees_url: `${api}/git/trees{/sha}`,
      clone_url: `${this.url}/${full}.git`,
      mirror_url: null,
      hooks_url: `${api}/hooks`,
      svn_url: `${this.url}/${full}`,
      homepage: null,
      language: null,
      license: null,
      forks: 0,
      forks_count: 0,
      stargazers_count: 0,
      watchers_count: 0,
      watchers: 0,
      size: 1,
      default_branch: repo.defaultBranch,
      open_issues: repo.pulls.filter((x) => x.state === 'open').length,
      open_issues_count: repo.pulls.filter((x) => x.state === 'open').length,
      has_issues: true,
      has_projects: false,
      has_wiki: false,
      has_pages: false,
      has_downloads: false,
      archived: false,
      disabled: false,
      visibility: 'private',
      pushed_at: '2020-01-01T00:00:00Z',
      created_at: '2020-01-01T00:00:00Z',
      updated_at: '2020-01-01T00:00:00Z',
    };
  }

  /** `pull-request` (`full`) or `pull-request-simple` (the list's items). */
  private pullJson(repo: StandInRepo, pr: StandInPull, full: boolean): Json {
    const api = `${this.url}/repos/${repo.owner}/${repo.name}`;
    const self = `${api}/pulls/${pr.number}`;
    const html = `${this.url}/${repo.owner}/${repo.name}/pull/${pr.number}`;
    const headSha = this.headOf(repo, pr);
    const ref = (branch: string, commit: string) => ({
      label: `${repo.owner}:${branch}`,
      ref: branch,
      sha: commit,
      user: this.user(repo.owner),
      repo: this.repoJson(repo),
    });
    const json: Json = {
      url: self,
      id: pr.id,
      node_id: `PR_${pr.id}`,
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      issue_url: `${api}/issues/${pr.number}`,
      commits_url: `${self}/commits`,
      review_comments_url: `${self}/comments`,
      review_comment_url: `${api}/pulls/comments{/number}`,
      comments_url: `${api}/issues/${pr.number}/comments`,
      statuses_url: `${api}/statuses/${headSha}`,
      number: pr.number,
      state: pr.state,
      locked: false,
      title: pr.title,
      user: this.user(pr.author),
      body: pr.body,
      labels: [],
      milestone: null,
      active_lock_reason: null,
      created_at: pr.createdAt,
      updated_at: pr.updatedAt,
      closed_at: pr.closedAt ?? null,
      merged_at: pr.merged?.at ?? null,
      merge_commit_sha: pr.merged?.sha ?? null,
      assignee: null,
      assignees: [],
      requested_reviewers: [],
      requested_teams: [],
      head: ref(pr.head, headSha),
      base: ref(pr.base, repo.branches.get(pr.base) ?? '0'.repeat(40)),
      _links: {
        self: { href: self },
        html: { href: html },
        issue: { href: `${api}/issues/${pr.number}` },
        comments: { href: `${api}/issues/${pr.number}/comments` },
        review_comments: { href: `${self}/comments` },
        review_comment: { href: `${api}/pulls/comments{/number}` },
        commits: { href: `${self}/commits` },
        statuses: { href: `${api}/statuses/${headSha}` },
      },
      author_association: pr.author === repo.owner ? 'OWNER' : 'COLLABORATOR',
      auto_merge: null,
      draft: false,
    };
    if (!full) return json;
    const blocked = pr.state === 'open' && this.approvals(pr) < repo.requiredApprovals;
    return {
      ...json,
      merged: !!pr.merged,
      mergeable: pr.state === 'open' ? true : null,
      rebaseable: pr.state === 'open' ? true : null,
      mergeable_state: pr.state !== 'open' ? 'unknown' : blocked ? 'blocked' : 'clean',
      merged_by: pr.merged ? this.user(pr.merged.by) : null,
      comments: 0,
      review_comments: 0,
      maintainer_can_modify: false,
      commits: 1,
      additions: 1,
      deletions: 0,
      changed_files: 1,
    };
  }

  /** `pull-request-review`. */
  private reviewJson(repo: StandInRepo, pr: StandInPull, r: StandInReview): Json {
    const html = `${this.url}/${repo.owner}/${repo.name}/pull/${pr.number}`;
    const prUrl = `${this.url}/repos/${repo.owner}/${repo.name}/pulls/${pr.number}`;
    return {
      id: r.id,
      node_id: `PRR_${r.id}`,
      user: this.user(r.user),
      body: r.body,
      state: r.state,
      html_url: `${html}#pullrequestreview-${r.id}`,
      pull_request_url: prUrl,
      _links: { html: { href: `${html}#pullrequestreview-${r.id}` }, pull_request: { href: prUrl } },
      ...(r.state === 'PENDING' ? {} : { submitted_at: r.submittedAt }),
      commit_id: r.commit,
      author_association: 'COLLABORATOR',
    };
  }

  /** `branch-protection`, with the parts a test set (the rest as GitHub shows them switched off). */
  private protectionJson(repo: StandInRepo, branch: string, p: StandInProtection): Json {
    const url = `${this.url}/repos/${repo.owner}/${repo.name}/branches/${encodeURIComponent(branch)}/protection`;
    const off = { enabled: false };
    return {
      url,
      ...(p.statusContexts
        ? {
            required_status_checks: {
              url: `${url}/required_status_checks`,
              strict: false,
              contexts: p.statusContexts,
              contexts_url: `${url}/required_status_checks/contexts`,
              checks: p.statusContexts.map((context) => ({ context, app_id: null })),
            },
          }
        : {}),
      ...(p.requiredApprovals !== undefined
        ? {
            required_pull_request_reviews: {
              url: `${url}/required_pull_request_reviews`,
              dismiss_stale_reviews: p.dismissStaleReviews ?? false,
              require_code_owner_reviews: false,
              required_approving_review_count: p.requiredApprovals,
              require_last_push_approval: false,
            },
          }
        : {}),
      enforce_admins: { url: `${url}/enforce_admins`, enabled: p.enforceAdmins ?? false },
      required_linear_history: off,
      allow_force_pushes: off,
      allow_deletions: off,
      block_creations: off,
      required_conversation_resolution: off,
      lock_branch: off,
      allow_fork_syncing: off,
      required_signatures: { url: `${url}/required_signatures`, enabled: false },
    };
  }

  /** `status`. */
  private statusJson(repo: StandInRepo, commit: string, s: StandInStatus): Json {
    return {
      url: `${this.url}/repos/${repo.owner}/${repo.name}/statuses/${commit}`,
      avatar_url: `${this.url}/avatars/${s.creator}`,
      id: s.id,
      node_id: `SC_${s.id}`,
      state: s.state,
      description: s.description,
      target_url: s.targetUrl,
      context: s.context,
      created_at: s.createdAt,
      updated_at: s.createdAt,
      creator: this.user(s.creator),
    };
  }
}

/** A commit-like id (40 hex digits) derived from `seed`. */
export function sha(seed: string): string {
  return createHash('sha1').update(seed).digest('hex');
}
