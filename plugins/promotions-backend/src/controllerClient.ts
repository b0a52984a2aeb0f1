import { answer, type ControllerApi, controllerApi, toBackstageError } from '@kpromo/plugin-promotions-common';
import { type Actor, actorHeaders } from '@kpromo/plugin-promotions-node';

export { type Actor, actorHeaders };

type Answer<D> = Promise<{ data?: D; error?: unknown; response: Response }>;

/**
 * The controller's JSON API (/api/v1) through the typed client derived from the contract
 * (@kpromo/contract `controllerApi`). Every call authenticates with the backend's bearer token
 * (`promotions.controller.token`) and names the identity it acts for in x-kpromo-user /
 * x-kpromo-groups; the controller accepts that only when RBAC lets the token's user impersonate it,
 * then authorises the call as that identity. Controller 400/401/403/404/409 answers become the
 * matching Backstage errors with the controller's message.
 */
export class ControllerClient {
  constructor(
    private readonly baseUrl: () => Promise<string>,
    private readonly token?: string,
  ) {}

  /** Runs one typed call (`(api) => api.GET('/plans', {...})`) for `as`; its data, or a Backstage error. */
  async call<D>(as: Actor, fn: (api: ControllerApi) => Answer<D>, signal?: AbortSignal): Promise<NonNullable<D>> {
    const api = controllerApi({
      baseUrl: `${await this.baseUrl()}/api/v1`,
      headers: {
        accept: 'application/json',
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...actorHeaders(as),
      },
      signal: signal ?? AbortSignal.timeout(30_000),
    });
    try {
      return await answer(fn(api));
    } catch (e) {
      throw toBackstageError(e, 'kpromo controller', 'promotions.controller.token');
    }
  }
}
