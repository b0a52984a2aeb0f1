import { Alert, Flex, Link, Text } from '@backstage/ui';
import { formatCountdown, formatTime, type PlanProgress, shortRef, useNow } from '@kpromo/plugin-promotions-react';
import { useEntityLinks } from '../routes';

/**
 * The person the controller judged `user` as (config persons: one person counts once, never for
 * their own plan), when it is not what the page shows for the user already.
 */
const asPerson = (user: string, person: string | undefined) =>
  person && person !== user && person !== shortRef(user) ? ` as ${person}` : '';

/** A user or group ref as a link to its catalog page. */
function EntityName({ entityRef, kind = 'user' }: { entityRef: string; kind?: string }) {
  const link = useEntityLinks()(entityRef, kind);
  return link ? (
    <Link href={link} title={entityRef}>
      {shortRef(entityRef)}
    </Link>
  ) : (
    <strong>{entityRef}</strong>
  );
}

/**
 * What the plan's gate says, for people: who asked for it, who approved and when, who still must
 * approve, the freeze window holding it (with a countdown), when its candidates have soaked, and
 * the alert that last restarted their soak.
 */
export function GateDetails({ g, started }: { g: PlanProgress; started: boolean }) {
  const now = useNow(1000);
  const frozen = g.frozen;
  const unseen = g.approvers.some((a) => !a.observedAt);
  const restart = g.soakResets?.[g.soakResets.length - 1];
  return (
    <Flex direction="column" gap="2" data-testid="plan-gate">
      {g.requestedBy ? (
        <Text as="p" variant="body-small" data-testid="requested-by">
          Requested by {g.requestedByAgent ? `agent ${g.requestedByAgent} for ` : ''}
          <EntityName entityRef={g.requestedBy} />
          {asPerson(g.requestedBy, g.requestedByPerson)}
        </Text>
      ) : null}
      {g.approvers.length ? (
        <ul data-testid="approvers" style={{ margin: 0, paddingLeft: 20 }}>
          {g.approvers.map((a) => (
            <li key={a.user}>
              <Text variant="body-small">
                Approved by <EntityName entityRef={a.user} />
                {asPerson(a.user, a.person)}
                {a.observedAt ? ` at ${formatTime(a.observedAt)}` : ' (not yet seen by the controller)'}
                {a.overrideFreeze ? ` (overriding the freeze: “${a.overrideReason ?? 'no reason given'}”)` : ''}
                {a.counted === false ? ` (does not count toward the approval policy${a.why ? `: ${a.why}` : ''})` : ''}
                {a.comment ? ` – “${a.comment}”` : ''}
              </Text>
            </li>
          ))}
        </ul>
      ) : (
        <Text as="p" variant="body-small" color="secondary" data-testid="approvers">
          No approvals yet
        </Text>
      )}
      {!g.approved && (unseen || g.waitingFor) ? (
        <Text as="p" variant="body-small" data-testid="waiting-for">
          {/* status.gate predates the newest approval until the controller has looked again */}
          {unseen ? 'Waiting for the controller to evaluate the latest approval' : `Waiting for ${g.waitingFor}`}
        </Text>
      ) : null}
      {frozen && !started ? (
        <Alert
          status={frozen.overriddenBy ? 'info' : 'warning'}
          title={`${frozen.overriddenBy ? 'Freeze overridden' : 'Frozen'}: ${frozen.window}`}
          description={
            <span data-testid="freeze">
              {[
                frozen.reason,
                frozen.until
                  ? `until ${formatTime(frozen.until)} (${formatCountdown(frozen.until, now)})`
                  : 'no end set',
                frozen.overriddenBy ? `overridden by ${frozen.overriddenBy}` : undefined,
              ]
                .filter(Boolean)
                .join(' · ')}
            </span>
          }
        />
      ) : null}
      {g.eligibleAt && !started && Date.parse(g.eligibleAt) > now ? (
        <Text as="p" variant="body-small" data-testid="soak">
          Soaking in {g.from}: eligible at {formatTime(g.eligibleAt)} ({formatCountdown(g.eligibleAt, now)})
        </Text>
      ) : null}
      {restart && !started ? (
        <Text as="p" variant="body-small" data-testid="soak-restart">
          Soak restarted at {formatTime(restart.at)}: {restart.reason}
          {g.soakResets!.length > 1 ? ` (${g.soakResets!.length} restarts)` : ''}
        </Text>
      ) : null}
    </Flex>
  );
}
