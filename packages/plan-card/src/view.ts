// The plan card's view (MCP Apps): runs in the host's sandboxed iframe, bundled with the ext-apps
// App class into one HTML file (scripts/build.ts); it fetches nothing. It renders the plan
// of the tool result it is given (structuredContent.plan, the MCP shape of the read model) and
// approves through the host with the uid it showed, so the approval is the person's and bound to
// what they saw. Cluster text is set as text, never as markup; a link only to an http(s) URL. Its
// words for the release's order and the pull request are every door's (@kpromo/contract/planText).
import { httpLink, pullRequestReviewText, pullRequestText, stepText } from '@kpromo/contract/planText';
import { App } from '@modelcontextprotocol/ext-apps';
import { sparkSegments } from './charts.js';
import { awaitsApproval, STATUS_META } from './meta.js';
import type { CardPlan } from './plan.js';

type Result = { content?: Array<{ type: string; text?: string }>; structuredContent?: unknown; isError?: boolean };

const app = new App({ name: 'kpromo plan card', version: '1.0.0' }, {});
const root = document.getElementById('card')!;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Array<Node | string | undefined>
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) if (c !== undefined) e.append(c);
  return e;
}

const short = (digest: string) => digest.replace(/^(sha256:)?([0-9a-f]{12})[0-9a-f]+$/, (_, p = '', h) => `${p}${h}…`);
const textOf = (r: Result) =>
  (r.content ?? []).flatMap((c) => (c.type === 'text' && c.text ? [c.text] : [])).join('\n');

function sparkline(values: readonly (number | null)[], label: string): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '-2 -2 84 24');
  svg.setAttribute('width', '84');
  svg.setAttribute('height', '24');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.classList.add('spark');
  for (const points of sparkSegments(values, 80, 20)) {
    const line = document.createElementNS(ns, points.includes(' ') ? 'polyline' : 'circle');
    if (points.includes(' ')) line.setAttribute('points', points);
    else {
      const [cx, cy] = points.split(',');
      line.setAttribute('cx', cx);
      line.setAttribute('cy', cy);
      line.setAttribute('r', '1.5');
    }
    svg.append(line);
  }
  return svg;
}

function candidatesTable(p: CardPlan): HTMLTableElement {
  const apps = new Map(p.apps.map((a) => [a.application, a]));
  // Each app's step in the release's order, known before approval: a column only when the plan has an order.
  const steps = new Map(
    p.candidates.map((c) => [c.application, stepText(c.step !== undefined ? c : (apps.get(c.application) ?? c))]),
  );
  const ordered = [...steps.values()].some((s) => s !== undefined);
  const rows = p.candidates.map((c) => {
    const sig = c.signature ?? apps.get(c.application)?.signature;
    return el(
      'tr',
      {},
      el('th', { scope: 'row' }, c.application),
      el('td', {}, c.tag),
      el('td', { title: c.digest }, el('code', {}, short(c.digest))),
      el(
        'td',
        { class: `verdict ${(sig?.verdict ?? 'none').toLowerCase()}`, ...(sig?.message ? { title: sig.message } : {}) },
        sig ? `${sig.verdict} (${sig.mode})` : 'not checked yet',
      ),
      ordered ? el('td', { class: 'step' }, steps.get(c.application) ?? '') : undefined,
      el('td', {}, apps.get(c.application)?.phase ?? 'Waiting'),
    );
  });
  const head = ['Application', 'Version', 'Digest', 'Signature', ...(ordered ? ['Order'] : []), 'Phase'].map((h) =>
    el('th', { scope: 'col' }, h),
  );
  return el('table', { 'aria-label': 'Candidates' }, el('thead', {}, el('tr', {}, ...head)), el('tbody', {}, ...rows));
}

function verification(p: CardPlan): HTMLElement | undefined {
  const items = p.apps.flatMap((a) =>
    (a.verification?.checks ?? []).map((c) =>
      el(
        'li',
        {},
        `${a.application} · ${c.name}: ${c.verdict} `,
        sparkline(c.values, `${a.application} ${c.name}: ${c.values.map((v) => v ?? 'no data').join(', ')}`),
      ),
    ),
  );
  return items.length ? el('section', {}, el('h2', {}, 'Verification'), el('ul', {}, ...items)) : undefined;
}

/**
 * A link the host opens (ui/open-link) when it can: the sandboxed card cannot navigate. Without the
 * capability the link stays an ordinary one (a host may still follow it) and its URL is in sight.
 */
function link(href: string, id: string): HTMLAnchorElement {
  const a = el('a', { id, href, target: '_blank', rel: 'noopener noreferrer' }, href);
  a.addEventListener('click', (e) => {
    if (!app.getHostCapabilities()?.openLinks) return;
    e.preventDefault();
    app.openLink({ url: href }).then(
      (r) => {
        if (r.isError) say(`The host did not open ${href}; copy it from the card.`, 'error');
      },
      (err: unknown) =>
        say(`The host could not open ${href}: ${err instanceof Error ? err.message : String(err)}`, 'error'),
    );
  });
  return a;
}

/** The pull request the plan promotes through: a link (http(s) only), its state and which reviews count. */
function pullRequest(p: CardPlan): HTMLElement | undefined {
  const pr = p.pullRequest;
  if (!pr) return undefined;
  const href = httpLink(pr.url);
  const reviews = pr.reviews.map((r) =>
    el('li', { class: r.counts ? 'counts' : 'not-counted' }, pullRequestReviewText(r)),
  );
  return el(
    'section',
    { 'aria-label': 'Pull request' },
    el('h2', {}, 'Pull request'),
    // The words every door says, with the URL as the link rather than inside them.
    el('p', {}, pullRequestText({ ...pr, url: undefined }), ...(href ? [' ', link(href, 'pr-link')] : [])),
    reviews.length ? el('ul', { 'aria-label': 'Reviews' }, ...reviews) : undefined,
    pr.message ? el('p', { class: 'pr-message' }, pr.message) : undefined,
  );
}

function approvals(p: CardPlan): HTMLElement {
  const given = p.approvals.map((a) =>
    el(
      'li',
      {},
      `${a.person ?? a.user}${a.person && a.person !== a.user ? ` (as ${a.user})` : ''}`,
      a.counted === false ? ' — does not count' : a.counted ? ' — counts' : ' — not judged yet',
    ),
  );
  return el(
    'section',
    {},
    el('h2', {}, 'Approvals'),
    given.length ? el('ul', {}, ...given) : el('p', {}, 'No approvals yet.'),
    el(
      'p',
      { class: 'waiting' },
      p.approved ? 'The approval policy is met.' : (p.waitingFor ?? 'Waiting for an approval.'),
    ),
  );
}

/** The status line under the buttons: what the last action did, read out by screen readers. */
const status = () => root.querySelector<HTMLElement>('#status')!;
function say(text: string, kind: 'ok' | 'error' | 'info') {
  const s = status();
  s.textContent = text;
  s.className = kind;
}

async function approve(p: CardPlan, buttons: HTMLButtonElement[]) {
  for (const b of buttons) b.disabled = true;
  say(`Approving plan ${p.name} (uid ${p.uid})…`, 'info');
  try {
    const r = (await app.callServerTool({
      name: 'promote',
      arguments: { namespace: p.namespace, plan: p.name, uid: p.uid },
    })) as Result & { _meta?: Record<string, unknown> };
    if (r.isError) {
      const code = r._meta?.[STATUS_META];
      say(`Refused${code ? ` (${code})` : ''}: ${textOf(r)}`, 'error');
      return;
    }
    const plan = (r.structuredContent as { plan?: CardPlan } | undefined)?.plan;
    if (plan) render(plan);
    say(textOf(r).split('\n')[0] ?? 'Approved.', 'ok');
  } catch (e) {
    for (const b of buttons) b.disabled = false;
    say(`The host could not call promote: ${e instanceof Error ? e.message : String(e)}`, 'error');
  }
}

/**
 * There is no reject operation: a plan nobody approves never runs. Reject tells the conversation
 * (the person's message, through the host) and leaves the plan as it is.
 */
async function reject(p: CardPlan, buttons: HTMLButtonElement[]) {
  for (const b of buttons) b.disabled = true;
  const text = `I reject PromotionPlan ${p.namespace}/${p.name} (uid ${p.uid}, ${p.from} → ${p.to}): do not approve it.`;
  const done = 'Not approved. The plan is unchanged and does not run unless someone approves it.';
  try {
    const r = await app.sendMessage({ role: 'user', content: [{ type: 'text', text }] });
    say(
      r.isError ? `${done} The host did not take the message into the chat.` : `${done} Said so in the chat.`,
      'info',
    );
  } catch {
    say(`${done} The host did not take the message into the chat.`, 'info');
  }
}

function actions(p: CardPlan): HTMLElement | undefined {
  if (!awaitsApproval(p)) return undefined;
  const ok = el('button', { type: 'button', id: 'approve' }, 'Approve');
  const no = el('button', { type: 'button', id: 'reject' }, 'Reject');
  ok.addEventListener('click', () => void approve(p, [ok, no]));
  no.addEventListener('click', () => void reject(p, [ok, no]));
  return el('div', { class: 'actions' }, ok, no);
}

function render(p: CardPlan) {
  root.replaceChildren(
    el('h1', {}, `${p.action === 'rollback' ? 'Rollback' : 'Promotion'} ${p.namespace}/${p.name}: ${p.from} → ${p.to}`),
    el(
      'p',
      { class: 'meta' },
      `Phase ${p.phase} (${p.outcome})`,
      el('br'),
      'uid ',
      el('code', { id: 'uid' }, p.uid ?? ''),
    ),
    candidatesTable(p),
    verification(p) ?? '',
    pullRequest(p) ?? '',
    approvals(p),
    actions(p) ?? '',
    el('p', { id: 'status', role: 'status', 'aria-live': 'polite' }),
  );
}

app.ontoolresult = (r: Result) => {
  const plan = (r.structuredContent as { plan?: CardPlan } | undefined)?.plan;
  if (plan) render(plan);
  else root.replaceChildren(el('pre', {}, textOf(r) || 'This result holds no plan.'));
};

app.connect().catch((e: unknown) => {
  root.textContent = `The card could not connect to its host: ${e instanceof Error ? e.message : String(e)}`;
});
