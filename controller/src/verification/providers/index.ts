import type { CheckProvider } from '../../extension/checkProvider.js';
import { registryOf } from '../../extension/registry.js';
import { analysisProvider } from './analysis.js';
import { httpProvider } from './http.js';
import { jobProvider } from './job.js';
import { prometheusProvider } from './prometheus.js';

/**
 * The check kinds kpromo measures itself, the fields the VerificationCheck CRD schema lists; adding
 * one is a file here and a line in this list. Plugins add theirs (ControllerPlugin.checkProviders).
 */
export const BUILTIN_CHECK_PROVIDERS: readonly CheckProvider[] = [
  prometheusProvider,
  httpProvider,
  analysisProvider,
  jobProvider,
];

export const builtinCheckProviders = registryOf('check provider', BUILTIN_CHECK_PROVIDERS, (p) => p.kind);
