import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeRest } from '../../src/kube/rest.js';

/**
 * Local stand-ins for Slack, Microsoft Teams (Workflows), Discord and GitHub, which cannot run here.
 * They are NOT those services: each route checks what the provider's documentation says a request
 * must look like (path, auth headers, payload shape and documented limits) and answers the way the
 * documented API answers (ids, ts, 202, 201, error bodies, and one 429 with Retry-After on request).
 * A request that breaks a documented rule is answered 400 and recorded in `problems`.
 */

export type SaasKind = 'slack-webhook' | 'slack-api' | 'teams' | 'discord' | 'github' | 'generic';

export interface Received {
  kind: SaasKind;
  method: string;
  /** Path and query as received. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  json?: unknown;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === 'string';

/** Slack Block Kit rules (https://api.slack.com/reference/block-kit/blocks and each block's page). */
export function slackMessageProblems(m: unknown, o: { api: boolean }): string[] {
  const p: string[] = [];
  if (!isObj(m)) return ['body is not a JSON object'];
  if (!str(m.text) || !m.text) p.push('text (the notification fallback) is missing');
  if (o.api && (!str(m.channel) || !m.channel)) p.push('chat.postMessage needs channel');
  if (m.thread_ts !== undefined && (!str(m.thread_ts) || !/^\d+\.\d+$/.test(m.thread_ts)))
    p.push('thread_ts is not a message ts');
  if (!Array.isArray(m.blocks)) return [...p, 'blocks is not an array'];
  if (m.blocks.length > 50) p.push(`${m.blocks.length} blocks; at most 50`);
  const text = (t: unknown, where: string, max: number, plainOnly = false) => {
    if (!isObj(t) || !str(t.text)) {
      p.push(`${where} has no text object`);
      return;
    }
    if (t.type !== 'plain_text' && (plainOnly || t.type !== 'mrkdwn')) p.push(`${where} text type ${String(t.type)}`);
    if (t.text.length < 1 || t.text.length > max) p.push(`${where} text is ${t.text.length} chars; 1..${max}`);
  };
  for (const [i, b] of (m.blocks as unknown[]).entries()) {
    const w = `blocks[${i}]`;
    if (!isObj(b)) {
      p.push(`${w} is not an object`);
      continue;
    }
    if (b.type === 'header') text(b.text, w, 150, true);
    else if (b.type === 'section') {
      if (b.text === undefined && b.fields === undefined) p.push(`${w} section needs text or fields`);
      if (b.text !== undefined) text(b.text, w, 3000);
      if (b.fields !== undefined) {
        if (!Array.isArray(b.fields) || b.fields.length > 10) p.push(`${w} has more than 10 fields`);
        else for (const [j, f] of b.fields.entries()) text(f, `${w}.fields[${j}]`, 2000);
      }
    } else if (b.type === 'context') {
      if (!Array.isArray(b.elements) || b.elements.length < 1 || b.elements.length > 10)
        p.push(`${w} context needs 1..10 elements`);
      else for (const [j, e] of b.elements.entries()) text(e, `${w}.elements[${j}]`, 3000);
    } else if (b.type !== 'divider') p.push(`${w} has unexpected type ${String(b.type)}`);
  }
  return p;
}

const ADAPTIVE_ELEMENTS = new Set(['TextBlock', 'FactSet', 'Container', 'ColumnSet', 'Image', 'RichTextBlock']);

/**
 * A Teams message carrying an Adaptive Card
 * (https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using)
 * with what the card schema requires (http://adaptivecards.io/schemas/adaptive-card.json): type,
 * version, and known elements with their required properties.
 */
export function teamsMessageProblems(m: unknown): string[] {
  const p: string[] = [];
  if (!isObj(m)) return ['body is not a JSON object'];
  if (m.type !== 'message') p.push('type must be "message"');
  if (!Array.isArray(m.attachments) || m.attachments.length < 1) return [...p, 'attachments is empty'];
  for (const [i, a] of (m.attachments as unknown[]).entries()) {
    const w = `attachments[${i}]`;
    if (!isObj(a)) {
      p.push(`${w} is not an object`);
      continue;
    }
    if (a.contentType !== 'application/vnd.microsoft.card.adaptive') p.push(`${w}.contentType is not an Adaptive Card`);
    const c = a.content;
    if (!isObj(c)) {
      p.push(`${w}.content is missing`);
      continue;
    }
    if (c.type !== 'AdaptiveCard') p.push(`${w}.content.type must be AdaptiveCard`);
    if (c.version !== '1.5') p.push(`${w}.content.version is ${String(c.version)}, expected 1.5`);
    if (c.$schema !== 'http://adaptivecards.io/schemas/adaptive-card.json') p.push(`${w}.content.$schema is missing`);
    if (!Array.isArray(c.body)) {
      p.push(`${w}.content.body is not an array`);
      continue;
    }
    for (const [j, e] of (c.body as unknown[]).entries()) {
      const we = `${w}.content.body[${j}]`;
      if (!isObj(e) || !str(e.type) || !ADAPTIVE_ELEMENTS.has(e.type)) {
        p.push(`${we} is not a known element`);
        continue;
      }
      if (e.type === 'TextBlock' && (!str(e.text) || !e.text)) p.push(`${we} TextBlock needs text`);
      if (e.type === 'FactSet') {
        if (!Array.isArray(e.facts)) p.push(`${we} FactSet needs facts`);
        else if (!e.facts.every((f) => isObj(f) && str(f.title) && str(f.value)))
          p.push(`${we} fact needs title and value`);
      }
    }
  }
  return p;
}

/** Discord embed limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits). */
export function discordMessageProblems(m: unknown): string[] {
  const p: string[] = [];
  if (!isObj(m)) return ['body is not a JSON object'];
  if (!Array.isArray(m.embeds) || m.embeds.length < 1) return ['embeds is empty'];
  if (m.embeds.length > 10) p.push(`${m.embeds.length} embeds; at most 10`);
  let total = 0;
  const len = (v: unknown, where: string, max: number) => {
    if (v === undefined) return;
    if (!str(v)) {
      p.push(`${where} is not a string`);
      return;
    }
    if (v.length > max) p.push(`${where} is ${v.length} chars; at most ${max}`);
    total += v.length;
  };
  for (const [i, e] of (m.embeds as unknown[]).entries()) {
    const w = `embeds[${i}]`;
    if (!isObj(e)) {
      p.push(`${w} is not an object`);
      continue;
    }
    len(e.title, `${w}.title`, 256);
    len(e.description, `${w}.description`, 4096);
    if (
      e.color !== undefined &&
      (!Number.isInteger(e.color) || (e.color as number) < 0 || (e.color as number) > 0xffffff)
    )
      p.push(`${w}.color is not an RGB integer`);
    if (e.timestamp !== undefined && (!str(e.timestamp) || Number.isNaN(Date.parse(e.timestamp))))
      p.push(`${w}.timestamp is not ISO8601`);
    if (e.footer !== undefined) len(isObj(e.footer) ? e.footer.text : undefined, `${w}.footer.text`, 2048);
    if (e.fields !== undefined) {
      if (!Array.isArray(e.fields) || e.fields.length > 25) {
        p.push(`${w} has more than 25 fields`);
        continue;
      }
      for (const [j, f] of (e.fields as unknown[]).entries()) {
        if (!isObj(f) || !str(f.name) || !str(f.value) || !f.name || !f.value) {
          p.push(`${w}.fields[${j}] needs a non-empty name and value`);
          continue;
        }
        len(f.name, `${w}.fields[${j}].name`, 256);
        len(f.value, `${w}.fields[${j}].value`, 1024);
      }
    }
  }
  if (total > 6000) p.push(`embeds hold ${total} chars; at most 6000 per message`);
  return p;
}

/** https://docs.github.com/en/rest/commits/statuses#create-a-commit-status */
export function githubStatusProblems(m: unknown): string[] {
  const p: string[] = [];
  if (!isObj(m)) return ['body is not a JSON object'];
  if (!['error', 'failure', 'pending', 'success'].includes(String(m.state))) p.push(`state ${String(m.state)}`);
  if (m.description !== undefined && (!str(m.description) || m.description.length > 140))
    p.push('description is longer than 140 characters');
  if (m.context !== undefined && !str(m.context)) p.push('context is not a string');
  if (m.target_url !== undefined && (!str(m.target_url) || !/^https?:\/\//.test(m.target_url)))
    p.push('target_url is not a URL');
  return p;
}

export interface SaasReceiverOptions {
  /** Bot token Slack's chat.postMessage accepts. */
  slackToken: string;
  /** Token the GitHub API accepts. */
  githubToken: string;
  /** Kinds whose first request is answered 429 (with Retry-After, and Discord's JSON retry_after). */
  rateLimitOnce?: SaasKind[];
}

/** Starts the stand-ins on 127.0.0.1; routes are under /slack, /teams, /discord, /github and /generic. */
export async function startSaasReceivers(o: SaasReceiverOptions) {
  const received: Received[] = [];
  const problems: string[] = [];
  const limited = new Set(o.rateLimitOnce ?? []);
  const discordMessages = new Map<string, Obj>();
  let seq = 0;
  const nextId = () => `${1_200_000_000_000_000_000n + BigInt(++seq)}`;

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://x');
      const path = url.pathname;
      const kind: SaasKind | undefined = path.startsWith('/slack/hooks/')
        ? 'slack-webhook'
        : path.startsWith('/slack/api/')
          ? 'slack-api'
          : path.startsWith('/teams/')
            ? 'teams'
            : path.startsWith('/discord/')
              ? 'discord'
              : path.startsWith('/github/')
                ? 'github'
                : path.startsWith('/generic')
                  ? 'generic'
                  : undefined;
      let json: unknown;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {
        json = undefined;
      }
      const method = req.method ?? 'GET';
      if (!kind) return void res.writeHead(404).end();
      received.push({ kind, method, url: req.url ?? '', headers: req.headers, body, json });
      const send = (status: number, payload?: unknown, headers: Record<string, string> = {}) => {
        const text = payload === undefined ? '' : typeof payload === 'string' ? payload : JSON.stringify(payload);
        res
          .writeHead(status, {
            ...(typeof payload === 'object' ? { 'content-type': 'application/json' } : {}),
            ...headers,
          })
          .end(text);
      };
      const refuse = (found: string[], status: number, payload: unknown) => {
        problems.push(...found.map((x) => `${kind} ${method} ${path}: ${x}`));
        send(status, payload);
      };
      if (limited.delete(kind)) {
        // Slack, Teams and GitHub send Retry-After; Discord also sends retry_after in the body.
        if (kind === 'discord')
          return send(
            429,
            { message: 'You are being rate limited.', retry_after: 0.3, global: false },
            {
              'retry-after': '1',
            },
          );
        if (kind === 'slack-api') return send(429, { ok: false, error: 'ratelimited' }, { 'retry-after': '1' });
        return send(429, kind === 'github' ? { message: 'API rate limit exceeded' } : 'rate limited', {
          'retry-after': '1',
        });
      }
      const ct = String(req.headers['content-type'] ?? '');
      if (method !== 'GET' && !ct.startsWith('application/json'))
        return refuse([`content-type ${ct}`], 400, { message: 'unsupported content type' });

      switch (kind) {
        case 'generic':
          return send(204);
        case 'slack-webhook': {
          // https://api.slack.com/messaging/webhooks: 200 "ok", or a plain-text error code.
          const found = slackMessageProblems(json, { api: false });
          return found.length ? refuse(found, 400, 'invalid_blocks') : send(200, 'ok');
        }
        case 'slack-api': {
          // https://api.slack.com/methods/chat.postMessage: HTTP 200 with ok true/false.
          if (req.headers.authorization !== `Bearer ${o.slackToken}`)
            return send(200, { ok: false, error: 'invalid_auth' });
          if (!path.endsWith('/chat.postMessage')) return send(200, { ok: false, error: 'unknown_method' });
          const found = slackMessageProblems(json, { api: true });
          if (found.length) return refuse(found, 200, { ok: false, error: 'invalid_blocks' });
          const m = json as Obj;
          const roots = received.filter((r) => r.kind === 'slack-api' && (r.json as Obj | undefined)?.ts);
          if (m.thread_ts !== undefined && !roots.some((r) => (r.json as Obj).ts === m.thread_ts))
            return send(200, { ok: false, error: 'thread_not_found' });
          const ts = `${1_700_000_000 + seq}.${String(++seq).padStart(6, '0')}`;
          // Remember the ts on the recorded request, so replies can be matched to a root.
          (received[received.length - 1].json as Obj).ts = ts;
          return send(200, { ok: true, channel: 'C0KPROMO01', ts, message: { type: 'message', text: m.text, ts } });
        }
        case 'teams': {
          const found = teamsMessageProblems(json);
          return found.length
            ? refuse(found, 400, { error: { code: 'InvalidRequestContent', message: 'bad card' } })
            : send(202);
        }
        case 'discord': {
          // https://discord.com/developers/docs/resources/webhook: /webhooks/{id}/{token}[/messages/{id}]
          const m = /^\/discord\/api\/webhooks\/(\d+)\/([\w-]+)(?:\/messages\/(\d+))?$/.exec(path);
          if (!m) return send(404, { message: 'Unknown Webhook', code: 10015 });
          const messageId = m[3];
          if (method === 'POST' && !messageId) {
            const found = discordMessageProblems(json);
            if (found.length) return refuse(found, 400, { message: 'Invalid Form Body', code: 50035 });
            if (url.searchParams.get('wait') !== 'true') return send(204);
            const id = nextId();
            const msg = {
              id,
              type: 0,
              channel_id: '1100',
              content: '',
              embeds: (json as Obj).embeds,
              webhook_id: m[1],
            };
            discordMessages.set(id, msg);
            return send(200, msg);
          }
          const msg = messageId ? discordMessages.get(messageId) : undefined;
          if (!msg) return send(404, { message: 'Unknown Message', code: 10008 });
          if (method === 'GET')
            return send(200, { ...msg, embeds: (msg.embeds as Obj[]).map((e) => ({ type: 'rich', ...e })) });
          if (method === 'PATCH') {
            const found = discordMessageProblems(json);
            if (found.length) return refuse(found, 400, { message: 'Invalid Form Body', code: 50035 });
            msg.embeds = (json as Obj).embeds;
            msg.edited_timestamp = new Date().toISOString();
            return send(200, msg);
          }
          return send(405, { message: '405: Method Not Allowed', code: 0 });
        }
        case 'github': {
          // https://docs.github.com/en/rest/commits/statuses#create-a-commit-status
          const m = /^\/github\/api\/v3\/repos\/([\w.-]+)\/([\w.-]+)\/statuses\/([0-9a-f]{40})$/.exec(path);
          if (req.headers.authorization !== `Bearer ${o.githubToken}`)
            return send(401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' });
          const hdr: string[] = [];
          if (req.headers.accept !== 'application/vnd.github+json')
            hdr.push('accept is not application/vnd.github+json');
          if (!req.headers['user-agent']) hdr.push('no user-agent (GitHub requires one)');
          if (req.headers['x-github-api-version'] !== '2022-11-28') hdr.push('no x-github-api-version');
          if (!m || method !== 'POST') return send(404, { message: 'Not Found' });
          const found = [...hdr, ...githubStatusProblems(json)];
          if (found.length) return refuse(found, 422, { message: 'Validation Failed' });
          const s = json as Obj;
          return send(201, {
            id: ++seq,
            url: `http://x/repos/${m[1]}/${m[2]}/statuses/${m[3]}`,
            state: s.state,
            description: s.description,
            context: s.context ?? 'default',
            target_url: s.target_url ?? null,
            created_at: new Date().toISOString(),
          });
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    host: base.slice('http://'.length),
    received,
    problems,
    /** Requests of one kind, in arrival order. */
    of: (kind: SaasKind) => received.filter((r) => r.kind === kind),
    discordMessage: (id: string) => discordMessages.get(id),
    urls: {
      slackWebhook: `${base}/slack/hooks/services/T0KPROMO/B0KPROMO/hooksecret`,
      slackApi: `${base}/slack/api`,
      teams: `${base}/teams/workflows/abc/triggers/manual/paths/invoke?sig=teamssecret`,
      discord: `${base}/discord/api/webhooks/123456789012345678/discordsecret`,
      githubApi: `${base}/github/api/v3`,
      generic: `${base}/generic`,
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export type SaasReceivers = Awaited<ReturnType<typeof startSaasReceivers>>;

/**
 * A credential Secret for a Notification: opted in (label) for the stand-in receivers only
 * (annotation; credentialPolicy.ts).
 */
export const receiverSecret = (
  client: KubeRest,
  r: SaasReceivers,
  namespace: string,
  name: string,
  data: Record<string, string>,
) =>
  client.apply(
    `/api/v1/namespaces/${namespace}/secrets/${name}`,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace,
        labels: { 'promotions.kpromo.dev/credential': 'true' },
        annotations: { 'promotions.kpromo.dev/destinations': `http://${r.host}/` },
      },
      stringData: data,
    },
    'ctl-test',
  );
