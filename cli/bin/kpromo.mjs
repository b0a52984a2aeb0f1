#!/usr/bin/env node
// Runs the CLI from its TypeScript sources in this repository (tsx's loader); `yarn build` makes
// cli/dist/kpromo.mjs, which plain node runs.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
