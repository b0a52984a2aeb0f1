// Generates src/generated/port.ts: the auth, blueprint and entity operations the exporter calls.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatePortTypes } from './portTypes.js';

await generatePortTypes({
  keep: /^\/v1\/(auth\/access_token|blueprints($|\/\{identifier\}$|\/\{blueprint_identifier\}\/(entities|bulk\/entities))|entities\/search)/,
  out: join(dirname(fileURLToPath(import.meta.url)), '../src/generated/port.ts'),
  command: 'yarn workspace @kpromo/exporter generate:port',
});
