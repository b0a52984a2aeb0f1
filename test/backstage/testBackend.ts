import { coreServices, createServiceFactory } from '@backstage/backend-plugin-api';
import {
  mockCredentials,
  mockServices,
  startTestBackend,
  type TestBackend,
  type TestBackendOptions,
} from '@backstage/backend-test-utils';

/**
 * The one way the Backstage plugin tests start a test backend (@backstage/backend-test-utils'
 * startTestBackend) with kpromo's plugins: a loopback listener on a free port, the root config put
 * together from the options, and the user services the tests need. Each test names its plugins and
 * modules and what it configures; the rest is the same everywhere.
 */

/** A config object, as mockServices.rootConfig takes it. */
export type ConfigData = NonNullable<mockServices.rootConfig.Options['data']>;

/** promotions.controller: where the promotions backend sends controller calls, and with which token. */
export interface ControllerConfig {
  baseUrl?: string;
  /** The backend's token at the controller. */
  token?: string;
  defaultNamespace?: string;
  mcpUrl?: string;
  /** The only URLs the token may go to besides baseUrl and byNamespace (for a module's locator). */
  allowedBaseUrls?: string[];
  byNamespace?: Array<{ namespaces: string[]; baseUrl: string }>;
}

export interface BackstageTestBackendOptions {
  /** The plugins, modules and service factories (the root config is made from the options below). */
  features: NonNullable<TestBackendOptions<[]>['features']>;
  /** promotions.controller. */
  controller?: ControllerConfig;
  /** The rest of promotions.* (port, assistant, entityRef, ...). */
  promotions?: ConfigData;
  /** backend.* besides the listener (database, actions, ...). */
  backend?: ConfigData;
  /** Other top-level config (catalog, permission, kpromo, ...). */
  config?: ConfigData;
  /**
   * Users' ownership entity refs (their groups), as the user info service answers them; a user not
   * listed gets the mock's (their own ref only).
   */
  ownership?: Record<string, string[]>;
  /**
   * Requests as a real Backstage sees them: a request without a token is unauthenticated (the mock's
   * default would be a user), and a plugin's on-behalf-of token for a user carries an actor. The
   * real catalog refuses the permission backend's apply-conditions call for a user principal
   * without an actor, so conditional decisions need this against the real catalog.
   */
  realAuth?: boolean;
}

export interface BackstageTestBackend {
  backend: TestBackend;
  /** http://127.0.0.1:<port>, the backend's root (plugins under /api/<pluginId>). */
  base: string;
}

/** mockServices.httpAuth with no default user, whose on-behalf-of user tokens carry an actor. */
const httpAuthWithActors = createServiceFactory({
  service: coreServices.httpAuth,
  deps: { plugin: coreServices.pluginMetadata },
  factory({ plugin }) {
    const inner = mockServices.httpAuth({ pluginId: plugin.getId(), defaultCredentials: mockCredentials.none() });
    return {
      credentials: (async (req, options) => {
        const c = await inner.credentials(req, options);
        const p = c.principal as { type: string; userEntityRef?: string; actor?: unknown };
        const token = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
        if (p.type === 'user' && token.startsWith('mock-service-token:') && !p.actor)
          return mockCredentials.user(p.userEntityRef, { actor: { subject: 'plugin:on-behalf' } });
        return c;
      }) as typeof inner.credentials,
      issueUserCookie: inner.issueUserCookie.bind(inner),
    };
  },
});

/** The mock user info service, with the ownership entity refs given for the users listed. */
const userInfoWith = (ownership: Record<string, string[]>) =>
  createServiceFactory({
    service: coreServices.userInfo,
    deps: {},
    factory() {
      const inner = mockServices.userInfo();
      return {
        async getUserInfo(credentials: Parameters<typeof inner.getUserInfo>[0]) {
          const info = await inner.getUserInfo(credentials);
          const refs = ownership[info.userEntityRef];
          return refs ? { ...info, ownershipEntityRefs: [...refs] } : info;
        },
      };
    },
  });

/** The root config the options describe: o.config, the listener, promotions.* and its controller. */
function rootConfig(o: BackstageTestBackendOptions): ConfigData {
  const promotions =
    o.controller || o.promotions
      ? { ...o.promotions, ...(o.controller ? { controller: o.controller as ConfigData } : {}) }
      : undefined;
  return {
    ...o.config,
    backend: { baseUrl: 'http://localhost:0', listen: { port: 0 }, ...o.backend },
    ...(promotions ? { promotions } : {}),
  };
}

/** Starts a Backstage test backend with the features and the config the options describe; stop it with backend.stop(). */
export async function startBackstageTestBackend(o: BackstageTestBackendOptions): Promise<BackstageTestBackend> {
  const backend = await startTestBackend({
    features: [
      ...o.features,
      ...(o.realAuth ? [httpAuthWithActors] : []),
      ...(o.ownership ? [userInfoWith(o.ownership)] : []),
      mockServices.rootConfig.factory({ data: rootConfig(o) }),
    ],
  });
  return { backend, base: `http://127.0.0.1:${(backend.server.address() as { port: number }).port}` };
}
