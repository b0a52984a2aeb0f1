import type { Candidate } from '@kpromo/api';

/** Problems listed in one refusal; the rest are counted. */
const SHOWN = 5;

/**
 * Pure: why candidates computed now are not the ones the caller reviewed (`expect`: per
 * application, the source digest shown), or undefined when they are exactly those. A plan created
 * and approved in one request computes its candidates when the request arrives, so a deploy to the
 * source between the view and the click, or an application that became a candidate meanwhile,
 * would otherwise be approved by someone who never saw it; one that is no longer a candidate makes
 * a release other than the one reviewed.
 */
export function shownCandidatesMismatch(
  candidates: readonly Pick<Candidate, 'application' | 'from'>[],
  expect: Readonly<Record<string, string>>,
  from: string,
  to: string,
): string | undefined {
  const problems: string[] = [];
  const now = new Map(candidates.map((c) => [c.application, c.from.digest]));
  for (const [application, digest] of now) {
    const shown = Object.hasOwn(expect, application) ? expect[application] : undefined;
    if (shown === undefined)
      problems.push(`application ${application} (${from} runs ${digest}) is a candidate you were not shown`);
    else if (shown !== digest)
      problems.push(`application ${application}: you reviewed ${shown}, ${from} now runs ${digest}`);
  }
  for (const [application, shown] of Object.entries(expect))
    if (!now.has(application))
      problems.push(
        `application ${application} you reviewed (${shown}) is no longer a candidate from ${from} to ${to}`,
      );
  if (!problems.length) return undefined;
  const more = problems.length > SHOWN ? ` (and ${problems.length - SHOWN} more)` : '';
  return `not created: ${problems.slice(0, SHOWN).join('; ')}${more}; review the candidates from ${from} to ${to} again (GET /diff) and send the digests shown as expect`;
}
