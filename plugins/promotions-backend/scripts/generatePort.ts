// Generates src/generated/port.ts: the operations this plugin calls (access token, action run update
// and run logs), with the exporter's generator over the same committed spec.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatePortTypes } from '../../../exporter/scripts/portTypes.js';

await generatePortTypes({
  keep: /^\/v1\/(auth\/access_token|actions\/runs\/\{run_id\}(\/logs)?)$/,
  out: join(dirname(fileURLToPath(import.meta.url)), '../src/generated/port.ts'),
  command: 'yarn workspace @kpromo/plugin-promotions-backend generate:port',
});
