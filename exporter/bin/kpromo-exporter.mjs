#!/usr/bin/env node
// Runs the exporter from its TypeScript sources in this repository (development): register tsx's
// loader, then start it. Production runs the bundle instead: `yarn build`, then
// `node exporter/dist/kpromo-exporter.mjs`.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
