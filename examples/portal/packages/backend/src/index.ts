// Example Backstage backend for the kpromo portal (new backend system).
import { createBackend } from '@backstage/backend-defaults';

const backend = createBackend();

backend.add(import('@backstage/plugin-app-backend'));
backend.add(import('@backstage/plugin-auth-backend'));
backend.add(import('@backstage/plugin-auth-backend-module-guest-provider'));
backend.add(import('@backstage/plugin-catalog-backend'));
backend.add(import('@kpromo/plugin-catalog-backend-module-promotions'));
backend.add(import('@backstage/plugin-catalog-backend-module-scaffolder-entity-model')); // Template entities
backend.add(import('@backstage/plugin-permission-backend'));
backend.add(import('./policy'));
backend.add(import('@backstage/plugin-mcp-actions-backend'));
backend.add(import('@kpromo/plugin-promotions-backend'));
backend.add(import('@kpromo/plugin-promotions-backend-module-port')); // Port self-service webhook
backend.add(import('@kpromo/plugin-promotions-backend-module-assistant')); // the portal assistant's chat
backend.add(import('@backstage/plugin-scaffolder-backend'));
backend.add(import('@kpromo/plugin-scaffolder-backend-module-promotions')); // kpromo:* template actions
// Search (in-memory Lunr index): catalog entities, and kpromo applications, environments and plans.
backend.add(import('@backstage/plugin-search-backend'));
backend.add(import('@backstage/plugin-search-backend-module-catalog'));
backend.add(import('./searchCollator'));

backend.start();
