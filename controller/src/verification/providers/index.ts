import type { VerificationCheck } from '@kpromo/api';
import { analysisProvider } from './analysis.js';
import { httpProvider } from './http.js';
import { prometheusProvider } from './prometheus.js';
import type { CheckProvider } from './provider.js';

export type { CheckContext, CheckProvider } from './provider.js';

/** The check kinds kpromo measures; adding one is a file here and a line in this list. */
export const CHECK_PROVIDERS: readonly CheckProvider[] = [prometheusProvider, httpProvider, analysisProvider];

export function providerFor(check: VerificationCheck, providers = CHECK_PROVIDERS): CheckProvider | undefined {
  return providers.find((p) => p.applies(check));
}
