import type { VerificationProgress } from '@kpromo/api';
import { CHECK_PROVIDERS, type CheckContext, type CheckProvider, providerFor } from './providers/index.js';
import type { VerificationSettings } from './settings.js';
import type { Measurement } from './verdict.js';

/**
 * Measures every check still Running, in parallel. A check whose measuring throws (its cluster
 * unreachable, a bug) yields a measurement without data and the error's message: it counts as no
 * sample, never as a pass, and the verdict's minimum samples turn a silent source into Inconclusive.
 */
export async function measureRound(
  s: VerificationSettings,
  progress: VerificationProgress,
  ctx: CheckContext,
  providers: readonly CheckProvider[] = CHECK_PROVIDERS,
): Promise<Map<string, Measurement>> {
  const running = new Set(progress.checks.filter((c) => c.verdict === 'Running').map((c) => c.name));
  const entries = await Promise.all(
    s.checks
      .filter((c) => running.has(c.name))
      .map(async (c): Promise<[string, Measurement]> => {
        const p = providerFor(c, providers);
        if (!p) return [c.name, { message: 'no provider measures this kind of check' }];
        try {
          return [c.name, await p.measure(c, ctx)];
        } catch (e) {
          return [c.name, { message: `could not measure: ${(e as Error).message}` }];
        }
      }),
  );
  return new Map(entries);
}
