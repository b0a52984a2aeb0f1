import { ApiError } from './api/context.js';
import { ConfigError } from './config.js';
import { ShardSelectorError } from './kube/namespaceShard.js';
import { buildControllerProgram } from './program.js';

buildControllerProgram()
  .parseAsync()
  .catch((e: unknown) => {
    if (e instanceof ConfigError || e instanceof ApiError || e instanceof ShardSelectorError)
      process.stderr.write(`${e.message}\n`);
    else process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(e instanceof ApiError ? 2 : 1);
  });
