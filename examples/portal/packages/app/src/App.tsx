import { SignInPage } from '@backstage/core-components';
import { createApp } from '@backstage/frontend-defaults';
import { AppRootElementBlueprint, createFrontendModule } from '@backstage/frontend-plugin-api';
import { SignInPageBlueprint } from '@backstage/plugin-app-react';
import { DocumentTitle } from './DocumentTitle';
import { accessibleLightTheme } from './theme';

// Plugins are not listed here: `app.packages: all` (app-config.yaml) lets the Backstage CLI discover
// every frontend plugin among this package's dependencies (catalog, search, user settings, org,
// catalog graph, @kpromo/plugin-promotions). This module only adds what is specific to the demo.

/**
 * Guest sign-in (auth.providers.guest in app-config): the demo works without an identity provider,
 * and the backend still sees a real Backstage user token (user:development/guest).
 */
const signInPage = SignInPageBlueprint.make({
  params: {
    loader: async () => (props) => <SignInPage {...props} auto providers={['guest']} />,
  },
});

/** A document title per page for the pages that do not set one themselves (catalog, search, settings). */
const documentTitle = AppRootElementBlueprint.make({
  name: 'document-title',
  params: { element: <DocumentTitle /> },
});

const app = createApp({
  features: [createFrontendModule({ pluginId: 'app', extensions: [signInPage, documentTitle, accessibleLightTheme] })],
});

export default app.createRoot();
