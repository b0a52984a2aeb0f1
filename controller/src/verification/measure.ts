import type { VerificationProgress } from '@kpromo/api';
import type { CheckContext, Measurement } from '../extension/checkProvider.js';
import type { CheckProviders } from '../extension/plugin.js';
import type { VerificationSettings } from './settings.js';
import { checkKind } from './verdict.js';

/**
 * Measures every check still Running, in parallel, each by the provider its kind names. A check
 * whose measuring throws (its cluster unreachable, a bug) or whose kind no provider registered
 * yields a measurement without data and why: it counts as no sample, never as a pass, and the
 * verdict's minimum samples turn a silent source into Inconclusive.
 */
export async function measureRound(
  s: VerificationSettings,
  progress: VerificationProgress,
  ctx: CheckContext,
  providers: CheckProviders,
): Promise<Map<string, Measurement>> {
  const running = new Set(progress.checks.filter((c) => c.verdict === 'Running').map((c) => c.name));
  const entries = await Promise.all(
    s.checks
      .filter((c) => running.has(c.name))
      .map(async (c): Promise<[string, Measurement]> => {
        const kind = checkKind(c);
        const provider = providers.get(kind);
        if (!provider)
          return [c.name, { message: `no provider measures this kind of check: ${providers.unknown(kind)}` }];
        try {
          return [c.name, await provider.measure(c, ctx)];
        } catch (e) {
          return [c.name, { message: `could not measure: ${(e as Error).message}` }];
        }
      }),
  );
  return new Map(entries);
}
