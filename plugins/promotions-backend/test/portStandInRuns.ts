import { PortStandIn } from '../../../exporter/test/portStandIn.js';

type Json = Record<string, unknown>;
type RouteFn = (
  template: string,
  method: string,
  params: Record<string, string>,
  body: Json,
  send: (status: number, body: Json) => void,
) => void;

export interface RecordedRun {
  patches: Json[];
  logs: Json[];
}

/**
 * The exporter's Port stand-in (which validates every request and response against Port's
 * OpenAPI spec) plus the two action-run operations this plugin calls. Only the in-memory
 * behaviour is added here; validation, auth and routing stay the stand-in's own.
 */
export function portStandInWithRuns(clientId: string, clientSecret: string) {
  const standIn = new PortStandIn(clientId, clientSecret);
  const runs = new Map<string, RecordedRun>();
  const run = (id: string) => {
    let r = runs.get(id);
    if (!r) {
      r = { patches: [], logs: [] };
      runs.set(id, r);
    }
    return r;
  };
  const target = standIn as unknown as { route: RouteFn };
  const original = target.route.bind(standIn);
  let seq = 0;
  target.route = (template, method, params, body, send) => {
    if (method === 'PATCH' && template === '/v1/actions/runs/{run_id}') {
      const r = run(params.run_id);
      r.patches.push(body);
      const merged = Object.assign({}, ...r.patches) as Json;
      return send(200, {
        ok: true,
        run: {
          id: params.run_id,
          action: { identifier: 'kpromo_promote' },
          properties: {},
          requiredApproval: false,
          source: 'UI',
          status: (merged.status as string | undefined) ?? 'IN_PROGRESS',
          ...(merged.statusLabel ? { statusLabel: merged.statusLabel } : {}),
          ...(merged.summary ? { summary: merged.summary } : {}),
          ...(merged.status ? { endedAt: new Date().toISOString() } : {}),
        },
      });
    }
    if (method === 'POST' && template === '/v1/actions/runs/{run_id}/logs') {
      run(params.run_id).logs.push(body);
      return send(201, {
        ok: true,
        runLog: {
          id: `log-${++seq}`,
          runId: params.run_id,
          message: String(body.message),
          createdBy: 'stand-in',
          createdAt: new Date().toISOString(),
        },
      });
    }
    return original(template, method, params, body, send);
  };
  return { standIn, runs };
}
