import type { PortApi } from '@kpromo/port-client';
import type { PortAction } from './crdActions.js';
import type { Logger } from './log.js';

export type ActionOutcome = 'created' | 'updated' | 'kept' | 'failed';

/**
 * What to do with an action definition given whether Port has it, as port-k8s-exporter decides
 * (pkg/crd/crd.go, handleCRD): create a missing one; replace an existing one only with
 * `overwriteCrdsActions: true`, otherwise leave it as the user may have edited it.
 */
export function actionStep(exists: boolean, overwrite: boolean): 'create' | 'replace' | 'keep' {
  if (!exists) return 'create';
  return overwrite ? 'replace' : 'keep';
}

const portError = (res: { response: Response; error?: unknown }) =>
  `HTTP ${res.response.status}${res.error ? ` ${JSON.stringify(res.error).slice(0, 300)}` : ''}`;

/**
 * Creates (or, with `overwrite`, replaces) one action in Port. Port's spec documents no success
 * answer for the actions routes, so success is read from the status alone. Failures are logged with
 * the action, the status and Port's message, and reported as `failed`; the blueprint's entities are
 * exported regardless.
 */
export async function syncAction(
  api: PortApi,
  action: PortAction,
  overwrite: boolean,
  log: Logger,
): Promise<ActionOutcome> {
  const id = action.identifier;
  const path = { params: { path: { action_identifier: id } } };
  try {
    const got = await api.GET('/v1/actions/{action_identifier}', path);
    const status = got.response.status;
    if (status !== 200 && status !== 404) {
      log.error({ action: id, reason: portError(got) }, 'cannot read Port action; restart the exporter to retry');
      return 'failed';
    }
    const step = actionStep(status === 200, overwrite);
    if (step === 'keep') {
      log.info(
        { action: id },
        'Port action exists and is kept; set overwriteCrdsActions: true (or delete it in Port) to have it replaced',
      );
      return 'kept';
    }
    // `action` is checked against Port's schema in test/crdActions.test.ts; the generated body type (a
    // union over every trigger and invocation kind) does not narrow from a plain object.
    const res =
      step === 'create'
        ? await api.POST('/v1/actions', { body: action as never })
        : await api.PUT('/v1/actions/{action_identifier}', { ...path, body: action as never });
    if (res.response.status >= 300) {
      log.error({ action: id, reason: portError(res) }, `cannot ${step} Port action`);
      return 'failed';
    }
    log.info({ action: id }, step === 'create' ? 'Port action created' : 'Port action replaced');
    return step === 'create' ? 'created' : 'updated';
  } catch (e) {
    log.error(
      { action: id, err: (e as Error).message },
      'cannot reach Port to sync action; restart the exporter to retry',
    );
    return 'failed';
  }
}
