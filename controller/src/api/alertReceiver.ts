import type { AlertmanagerWebhookBody, AlertReceipt } from '@kpromo/contract';
import type { Caller } from '../auth/identity.js';
import { who } from './access.js';
import { ApiError } from './apiError.js';
import type { ApiContext } from './context.js';
import { liftLineStop, stopLine } from './lineStops.js';
import { restartSoaks } from './soakResets.js';

/** How alerts stop the line (config `lineStopAlerts`). */
export interface LineStopAlertSettings {
  /** An alert stops the line when this label is "true". */
  label: string;
  /** A resolved alert lifts the LineStop its firing created. */
  liftOnResolve: boolean;
  /** Where a stop without a `kpromo_namespace` label goes (scope AllNamespaces); none: such alerts are ignored. */
  lineStopNamespace?: string;
}

/** Labels an alert may carry to aim the stop (Prometheus label names: no dots or dashes). */
export const NAMESPACE_LABEL = 'kpromo_namespace';
export const ENVIRONMENT_LABEL = 'kpromo_environment';

type Alert = AlertmanagerWebhookBody['alerts'][number];

export type AlertAction =
  | {
      op: 'stop';
      namespace: string;
      name: string;
      reason: string;
      scope: 'Namespace' | 'AllNamespaces';
      environments?: string[];
      alert: string;
      fingerprint: string;
    }
  | { op: 'lift'; namespace: string; name: string; scope: 'Namespace' | 'AllNamespaces'; fingerprint: string }
  | { op: 'ignore'; fingerprint: string; why: string };

/** One LineStop per alert: its name follows from Alertmanager's fingerprint, so repeats are idempotent. */
export const alertStopName = (fingerprint: string) => `alert-${fingerprint.toLowerCase()}`;

/**
 * Pure: what each alert of an Alertmanager notification asks for. Firing alerts carrying the label
 * stop the line in their `kpromo_namespace` (or everywhere, from the line-stop namespace); resolved
 * ones lift it when so configured; everything else is ignored with the reason.
 */
export function alertActions(body: AlertmanagerWebhookBody, s: LineStopAlertSettings): AlertAction[] {
  return body.alerts.map((a: Alert): AlertAction => {
    const fingerprint = a.fingerprint;
    if (a.labels[s.label] !== 'true') return { op: 'ignore', fingerprint, why: `no label ${s.label}="true"` };
    const ns = a.labels[NAMESPACE_LABEL];
    const namespace = ns || s.lineStopNamespace;
    if (!namespace)
      return {
        op: 'ignore',
        fingerprint,
        why: `no ${NAMESPACE_LABEL} label, and no lineStopNamespace is configured for stops of every namespace`,
      };
    const name = alertStopName(fingerprint);
    const scope = ns ? 'Namespace' : 'AllNamespaces';
    if (a.status === 'resolved')
      return s.liftOnResolve
        ? { op: 'lift', namespace, name, scope, fingerprint }
        : { op: 'ignore', fingerprint, why: 'resolved; lineStopAlerts.liftOnResolve is off, a person lifts the stop' };
    const alert = a.labels.alertname ?? 'alert';
    const summary = a.annotations?.summary ?? a.annotations?.description;
    const env = a.labels[ENVIRONMENT_LABEL];
    return {
      op: 'stop',
      namespace,
      name,
      reason: `alert ${alert}${summary ? `: ${summary}` : ''}`.slice(0, 1024),
      scope,
      ...(env ? { environments: [env] } : {}),
      alert,
      fingerprint,
    };
  });
}

/** The RBAC verb on linestops that makes a caller an alert source (kpromo's own, like override-freeze). */
export const ALERT_VERB = 'alert';

/**
 * May the caller act on alerts for this stop? Recording an alert as the cause of a LineStop needs
 * the verb `alert` on linestops, which no person role holds, besides create/delete: a release manager
 * who may stop the line cannot pass a stop off as an alert's. The labels choose the namespace, so the
 * verb is checked in that namespace; a stop of every namespace (no namespace label) needs it in all
 * namespaces (a ClusterRoleBinding), not only in the line-stop namespace.
 */
async function requireAlertSource(
  ctx: ApiContext,
  caller: Caller,
  a: { namespace: string; scope: 'Namespace' | 'AllNamespaces' },
  what = 'stop or lift the line',
): Promise<void> {
  const everywhere = a.scope === 'AllNamespaces';
  const allowed = await ctx.access.may(caller, {
    verb: ALERT_VERB,
    resource: 'linestops',
    ...(everywhere ? {} : { namespace: a.namespace }),
  });
  if (allowed) return;
  throw new ApiError(
    403,
    everywhere
      ? `forbidden: ${who(caller)} may not stop every namespace from an alert (Kubernetes RBAC: needs verb ${ALERT_VERB} on linestops in all namespaces, a ClusterRole bound with a ClusterRoleBinding)`
      : `forbidden: ${who(caller)} may not ${what} from alerts in namespace ${a.namespace} (Kubernetes RBAC: needs verb ${ALERT_VERB} on linestops there)`,
  );
}

/**
 * Applies an Alertmanager notification as the authenticated caller (Alertmanager's own identity,
 * from the bearer token of its webhook config): each stop and lift is authorised as that caller,
 * like any other door, and only a caller holding the `alert` verb there is an alert source. A LineStop that already exists is a repeat; one already gone was lifted by a
 * person, which the resolved alert does not fight. A refusal makes the whole answer a 403, so that
 * Alertmanager's log shows it.
 */
export async function receiveAlerts(
  ctx: ApiContext,
  caller: Caller,
  body: AlertmanagerWebhookBody,
  s: LineStopAlertSettings,
): Promise<AlertReceipt> {
  const out: AlertReceipt = { stopped: [], lifted: [], unchanged: [], ignored: [], soakRestarts: [] };
  const refused: string[] = [];
  for (const a of alertActions(body, s)) {
    if (a.op === 'ignore') {
      out.ignored.push({ fingerprint: a.fingerprint, why: a.why });
      continue;
    }
    const ref = `${a.namespace}/${a.name}`;
    try {
      await requireAlertSource(ctx, caller, a);
      if (a.op === 'stop') {
        await stopLine(ctx, caller, {
          namespace: a.namespace,
          name: a.name,
          reason: a.reason,
          scope: a.scope,
          environments: a.environments,
          source: { kind: 'Alert', alert: a.alert, fingerprint: a.fingerprint },
        });
        out.stopped.push(ref);
      } else {
        await liftLineStop(ctx, caller, a.namespace, a.name);
        out.lifted.push(ref);
      }
    } catch (e) {
      if (e instanceof ApiError && ((a.op === 'stop' && e.status === 409) || (a.op === 'lift' && e.status === 404)))
        out.unchanged.push(ref);
      else if (e instanceof ApiError && e.status === 403) refused.push(e.message);
      else throw e;
    }
  }
  // Soaks: a firing alert naming a namespace and an environment restarts the soaks there whose
  // soak.resetOn it matches. The labels choose the namespace, so the caller must be an alert source
  // there, whatever the cluster holds (the answer tells a stranger nothing about the plans).
  for (const a of body.alerts) {
    const namespace = a.labels[NAMESPACE_LABEL];
    const environment = a.labels[ENVIRONMENT_LABEL];
    if (a.status !== 'firing' || !namespace || !environment) continue;
    try {
      await requireAlertSource(ctx, caller, { namespace, scope: 'Namespace' }, 'restart soaks');
    } catch (e) {
      if (e instanceof ApiError && e.status === 403) {
        refused.push(e.message);
        continue;
      }
      throw e;
    }
    const alert = {
      labels: a.labels,
      fingerprint: a.fingerprint,
      ...(a.startsAt ? { startsAt: a.startsAt } : {}),
      ...(a.annotations?.summary || a.annotations?.description
        ? { summary: a.annotations?.summary ?? a.annotations?.description }
        : {}),
    };
    for (const plan of await restartSoaks(ctx, caller, namespace, environment, alert))
      out.soakRestarts.push({ plan, fingerprint: a.fingerprint });
  }
  if (refused.length) throw new ApiError(403, [...new Set(refused)].join('; '));
  return out;
}
