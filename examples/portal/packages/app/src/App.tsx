import { SignInPage } from '@backstage/core-components';
import { createApp } from '@backstage/frontend-defaults';
import { createFrontendModule } from '@backstage/frontend-plugin-api';
import { SignInPageBlueprint } from '@backstage/plugin-app-react';
import catalogPlugin from '@backstage/plugin-catalog/alpha';
import promotionsPlugin from '@kpromo/plugin-promotions/alpha';

// Guest sign-in (auth.providers.guest in app-config): the demo works without an identity provider,
// and the backend still sees a real Backstage user token (user:development/guest).
const signInModule = createFrontendModule({
  pluginId: 'app',
  extensions: [
    SignInPageBlueprint.make({
      params: {
        loader: async () => (props) => <SignInPage {...props} auto providers={['guest']} />,
      },
    }),
  ],
});

export const app = createApp({
  features: [catalogPlugin, promotionsPlugin, signInModule],
});
