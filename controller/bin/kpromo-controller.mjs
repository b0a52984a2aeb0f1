#!/usr/bin/env node
// The controller runs from its TypeScript sources in this repository: register tsx's loader, then
// start the CLI. (`node controller/src/main.ts` alone cannot resolve the sources' .js imports.)
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
