import { useApi } from '@backstage/frontend-plugin-api';
import {
  Button,
  Cell,
  Column,
  Flex,
  Row,
  Switch,
  TableBody,
  TableHeader,
  TableRoot,
  Text,
  TextField,
} from '@backstage/ui';
import {
  cellLabel,
  cellTitle,
  type FleetCell,
  type FleetGrid,
  fleetGrid,
  formatCountdown,
  formatTime,
  isProblemPhase,
  PhaseBadge,
  type PlanDetails,
  type PlanProgress,
  type PlanWave,
  type PromotionPlan,
  phaseTone,
  problemsOnly,
  promotionContinuePermission,
  promotionsApiRef,
  readableMessage,
  StatusMark,
  shortRef,
  useCurrentUser,
  useNow,
  usePromotionPermission,
} from '@kpromo/plugin-promotions-react';
import { type CSSProperties, useState } from 'react';
import { ConfirmDialog } from './Confirm';

/** "prod-eu-1, prod-eu-2, prod-eu-3 and 47 more": a wave's clusters in a table cell (all of them on hover). */
const clusterList = (clusters: readonly string[], shown = 3) =>
  clusters.length > shown
    ? `${clusters.slice(0, shown).join(', ')} and ${clusters.length - shown} more`
    : clusters.join(', ');

const GLYPH: Record<string, string> = {
  Pending: '',
  Copying: '…',
  Writing: '…',
  RollingOut: '…',
  Verifying: '…',
  Succeeded: '✓',
  Failed: '✕',
  RolledBack: '↺',
};

/** What a wave says beyond its phase: the controller's message, its soak, who continued it, its pause. */
function WaveDetails({ w }: { w: PlanWave }) {
  const now = useNow(1000); // here, not in the whole section: the grid does not re-render every second
  const until = w.soakUntil;
  const soaking = w.phase === 'Soaking' && !!until;
  const notes = [
    until
      ? soaking
        ? `Soaking until ${formatTime(until)} (${formatCountdown(until, now)})`
        : `Soaked until ${formatTime(until)}`
      : w.soak && ['Pending', 'Waiting', 'Promoting'].includes(w.phase)
        ? `Soaks ${w.soak} once it succeeded`
        : '',
    w.continuedBy ? `Continued by ${shortRef(w.continuedBy)}` : '',
    w.pendingContinuation
      ? `Continued by ${shortRef(w.pendingContinuation.user)}; waiting for the controller to start it`
      : '',
    w.pause ? 'The next wave waits for a continuation' : '',
  ].filter(Boolean);
  return (
    <Flex direction="column" gap="0" data-testid={`wave-details-${w.name}`}>
      {w.message ? <Text variant="body-small">{readableMessage(w.message)}</Text> : null}
      {notes.map((l) => (
        <Text key={l} variant="body-small" color="secondary">
          {l}
        </Text>
      ))}
    </Flex>
  );
}

/** Backstage UI's border colour (light and dark themes). */
const LINE = 'var(--bui-border-1, #d0d0d0)';
const scroller: CSSProperties = {
  overflowX: 'auto',
  maxWidth: '100%',
  border: `1px solid ${LINE}`,
  borderRadius: 4,
  background: 'var(--bui-bg-neutral-1, #fff)',
};
const sticky: CSSProperties = {
  position: 'sticky',
  left: 0,
  zIndex: 1,
  background: 'var(--bui-bg-neutral-1, #fff)',
  textAlign: 'left',
  padding: '0 8px',
  fontWeight: 600,
  borderRight: `1px solid ${LINE}`,
};
/** Text cut to a width with an ellipsis (table cells ignore max-width; a block inside them does not). */
const clipped = (width: number): CSSProperties => ({
  display: 'block',
  maxWidth: width,
  overflow: 'hidden',
  textOverflow: 'ellipsis',
  whiteSpace: 'nowrap',
});
const CELL = 18;
/** Between two waves: a thicker line. */
const waveEdge = (first: boolean): CSSProperties =>
  first ? { borderLeft: '2px solid var(--bui-border-2, #999)' } : {};

/** The legend of the grid's marks: the glyph as well as the colour says what a mark means. */
function Legend() {
  const entries: Array<[string, string]> = [
    ['Succeeded', 'succeeded'],
    ['Failed', 'failed'],
    ['RollingOut', 'in flight'],
    ['Pending', 'pending'],
    ['RolledBack', 'rolled back'],
  ];
  return (
    <div aria-hidden="true" style={{ display: 'flex', gap: 12, alignItems: 'center', flexWrap: 'wrap' }}>
      {entries.map(([phase, text]) => (
        <span key={phase} style={{ display: 'inline-flex', alignItems: 'center', gap: 4 }}>
          <StatusMark tone={phaseTone(phase as FleetCell['phase'])} glyph={GLYPH[phase] ?? ''} label={text} />
          <Text variant="body-small" color="secondary">
            {text}
          </Text>
        </span>
      ))}
    </div>
  );
}

/**
 * Applications × clusters, the clusters grouped by wave: a small mark per cell, cluster names
 * rotated (whole on hover), scrolling sideways in its own box so 50 clusters × 30 apps stay readable.
 */
function ClusterGrid({ grid, onlyProblems }: { grid: FleetGrid; onlyProblems: boolean }) {
  const firstOfWave = new Set(grid.waves.map((w) => w.clusters[0]));
  return (
    <section
      aria-label="Applications by cluster"
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls must take focus for keyboards to scroll it
      tabIndex={0}
      style={scroller}
      data-testid="fleet-grid"
    >
      <table style={{ borderCollapse: 'separate', borderSpacing: 0, fontSize: 12 }}>
        <caption style={{ position: 'absolute', width: 1, height: 1, overflow: 'hidden', clip: 'rect(0 0 0 0)' }}>
          Each application's phase in each cluster, clusters grouped by wave
        </caption>
        <thead>
          <tr>
            <th rowSpan={2} scope="col" style={{ ...sticky, verticalAlign: 'bottom', paddingBottom: 4 }}>
              Application
            </th>
            {grid.waves.map((w) => (
              <th
                key={w.name}
                colSpan={w.clusters.length}
                scope="colgroup"
                title={`Wave ${w.name}: ${w.clusters.join(', ')}`}
                data-wave={w.name}
                style={{
                  ...waveEdge(true),
                  padding: '2px 2px',
                  textAlign: 'left',
                  fontWeight: 600,
                  borderBottom: `1px solid ${LINE}`,
                }}
              >
                {/* As wide as its clusters: a one-cluster wave's name is cut, whole in the title. */}
                <span style={clipped(Math.max(w.clusters.length * CELL - 4, 12))}>{w.name}</span>
              </th>
            ))}
          </tr>
          <tr>
            {grid.waves.flatMap((w) =>
              w.clusters.map((c) => (
                <th
                  key={c}
                  scope="col"
                  title={c}
                  data-cluster={c}
                  style={{
                    ...waveEdge(firstOfWave.has(c)),
                    width: CELL,
                    minWidth: CELL,
                    maxWidth: CELL,
                    height: 96,
                    padding: '2px 0',
                    verticalAlign: 'bottom',
                    fontWeight: 400,
                  }}
                >
                  {/* Rotated to read bottom-up; long names end in an ellipsis, whole in the title. */}
                  <span
                    style={{
                      display: 'inline-block',
                      writingMode: 'vertical-rl',
                      transform: 'rotate(180deg)',
                      maxHeight: 92,
                      overflow: 'hidden',
                      textOverflow: 'ellipsis',
                      whiteSpace: 'nowrap',
                    }}
                  >
                    {c}
                  </span>
                </th>
              )),
            )}
          </tr>
        </thead>
        <tbody>
          {grid.applications.map((a) => (
            <tr key={a} data-application={a}>
              <th scope="row" title={a} style={{ ...sticky, borderBottom: `1px solid ${LINE}` }}>
                <span style={clipped(200)}>{a}</span>
              </th>
              {grid.clusters.map((c) => {
                const cell = grid.cell(a, c);
                const shown = !onlyProblems || isProblemPhase(cell.phase);
                return (
                  <td
                    key={c}
                    style={{
                      ...waveEdge(firstOfWave.has(c)),
                      width: CELL,
                      padding: 1,
                      textAlign: 'center',
                      borderBottom: `1px solid ${LINE}`,
                    }}
                  >
                    {shown ? (
                      <StatusMark
                        tone={phaseTone(cell.phase)}
                        glyph={GLYPH[cell.phase] ?? ''}
                        label={cellLabel(cell)}
                        title={cellTitle(cell, readableMessage)}
                        data-phase={cell.phase}
                      />
                    ) : null}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** One row per wave: phase, clusters succeeded and failed, failure budget, details, and Continue on a wave that waits. */
function WavesTable({
  rows,
  continuePerm,
  onContinue,
}: {
  rows: PlanWave[];
  /** The user holds promotion.continue for every application of the plan. */
  continuePerm: { loading: boolean; allowed: boolean };
  onContinue: (wave: string) => void;
}) {
  return (
    <TableRoot aria-label="Plan waves">
      <TableHeader>
        <Column isRowHeader>Wave</Column>
        <Column>Phase</Column>
        <Column>Clusters</Column>
        <Column>Failure budget</Column>
        <Column>Details</Column>
      </TableHeader>
      <TableBody>
        {rows.map((w) => (
          <Row key={w.name} id={w.name}>
            <Cell>
              <Text weight="bold">{w.name}</Text>
            </Cell>
            <Cell>
              <span data-testid={`wave-phase-${w.name}`}>
                <PhaseBadge phase={w.phase} />
              </span>
            </Cell>
            <Cell>
              <Flex direction="column" gap="0">
                <Text variant="body-small" data-testid={`wave-counts-${w.name}`}>
                  {w.succeeded}/{w.clusters.length} succeeded · {w.failed} failed
                </Text>
                <Text variant="body-small" color="secondary" title={w.clusters.join(', ')}>
                  {clusterList(w.clusters)}
                </Text>
              </Flex>
            </Cell>
            <Cell>
              <Text variant="body-small" data-testid={`wave-budget-${w.name}`}>
                {w.budget === 0 ? 'no cluster may fail' : `${w.budget} cluster${w.budget === 1 ? '' : 's'} may fail`}
                {w.failed > w.budget ? ' · exceeded' : ''}
              </Text>
            </Cell>
            <Cell>
              <Flex direction="column" gap="1" align="start">
                <WaveDetails w={w} />
                {w.phase === 'Waiting' && !w.pendingContinuation && continuePerm.allowed ? (
                  <Button variant="primary" size="small" onPress={() => onContinue(w.name)}>
                    {`Continue wave ${w.name}`}
                  </Button>
                ) : null}
                {w.phase === 'Waiting' && !w.pendingContinuation && !continuePerm.loading && !continuePerm.allowed ? (
                  <Text variant="body-small" color="secondary" data-testid={`wave-no-continue-${w.name}`}>
                    You do not have the promotion.continue permission to let it start.
                  </Text>
                ) : null}
              </Flex>
            </Cell>
          </Row>
        ))}
      </TableBody>
    </TableRoot>
  );
}

/** Every application in every cluster, grouped by wave, with a filter for what needs attention. */
function FleetClusters({
  plan,
  progress,
  applications,
}: {
  plan: PromotionPlan;
  progress: PlanProgress;
  applications: string[];
}) {
  const [onlyProblems, setOnlyProblems] = useState(false);
  const grid = fleetGrid(plan, progress, applications);
  const shown = onlyProblems ? problemsOnly(grid) : grid;
  return (
    <>
      <Flex justify="between" align="center" gap="3" style={{ flexWrap: 'wrap' }}>
        <Text as="h3" variant="title-small">
          Clusters
        </Text>
        <Switch label="Only problems" isSelected={onlyProblems} onChange={setOnlyProblems} />
      </Flex>
      <Text as="p" variant="body-small" color="secondary" data-testid="fleet-summary">
        {grid.applications.length} application{grid.applications.length === 1 ? '' : 's'} × {grid.clusters.length}{' '}
        cluster{grid.clusters.length === 1 ? '' : 's'} · {grid.failed} failed · {grid.inFlight} in flight
      </Text>
      <Legend />
      {shown.applications.length ? (
        <ClusterGrid grid={shown} onlyProblems={onlyProblems} />
      ) : (
        <Text as="p" variant="body-small" data-testid="fleet-no-problems">
          {onlyProblems ? 'No application failed or is in flight in any cluster.' : 'This plan has no applications.'}
        </Text>
      )}
    </>
  );
}

/**
 * The confirmation of letting `wave` start: its clusters, how the earlier waves went, and a comment.
 * Bound to the plan shown (its uid).
 */
function ContinueWaveDialog({
  plan,
  rows,
  wave,
  onClose,
  onChange,
}: {
  plan: PromotionPlan;
  rows: PlanWave[];
  /** The wave to confirm; none: the dialog is closed. */
  wave?: string;
  onClose: () => void;
  onChange: (p: PlanDetails) => void;
}) {
  const api = useApi(promotionsApiRef);
  const me = useCurrentUser();
  const ns = plan.metadata.namespace ?? 'default';
  const [comment, setComment] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const waiting = rows.find((w) => w.name === wave);
  const earlier = waiting ? rows.slice(0, rows.indexOf(waiting)) : [];

  const close = () => {
    onClose();
    setError(undefined);
    setComment('');
  };
  const continueWave = async (wave: string) => {
    setBusy(true);
    setError(undefined);
    try {
      onChange(
        await api.continuePlan(ns, plan.metadata.name, {
          wave,
          ...(comment.trim() ? { comment: comment.trim() } : {}),
          uid: plan.metadata.uid,
        }),
      );
      close();
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <ConfirmDialog
      isOpen={!!waiting}
      title={`Continue wave ${waiting?.name ?? ''} of ${plan.metadata.name}?`}
      confirmLabel={`Continue wave ${waiting?.name ?? ''}`}
      busy={busy}
      error={error}
      onCancel={close}
      onConfirm={() => waiting && continueWave(waiting.name)}
    >
      <Text as="p">
        The controller starts promoting the {waiting?.clusters.length ?? 0} cluster
        {waiting?.clusters.length === 1 ? '' : 's'} of wave {waiting?.name} in {plan.spec.to}:{' '}
        {clusterList(waiting?.clusters ?? [], 10)}. Your continuation is recorded as {me ?? 'you'}.
      </Text>
      {earlier.length ? (
        <ul data-testid="continue-earlier-waves" style={{ margin: 0, paddingLeft: 20 }}>
          {earlier.map((r) => (
            <li key={r.name}>
              <Text variant="body-small">
                Wave {r.name}: {r.phase}, {r.succeeded}/{r.clusters.length} succeeded, {r.failed} failed
              </Text>
            </li>
          ))}
        </ul>
      ) : null}
      <TextField label="Comment" placeholder="e.g. canary looked good" value={comment} onChange={setComment} />
    </ConfirmDialog>
  );
}

/**
 * A fleet plan's waves (phase, clusters succeeded and failed, failure budget, soak, who continued
 * it) with "Continue wave" on a wave that waits, and every application in every cluster below,
 * grouped by wave, with a filter for what needs attention. Renders nothing for a plan into one cluster.
 * The waves are the read model's (`progress.waves`); the cells come from status.targets.
 */
export function PlanWaves({
  plan,
  progress,
  applications,
  onChange,
}: {
  plan: PromotionPlan;
  progress: PlanProgress;
  /** The plan's applications, in the order the plan view lists them. */
  applications: string[];
  onChange: (p: PlanDetails) => void;
}) {
  const ns = plan.metadata.namespace ?? 'default';
  const rows = progress.waves;
  // As the backend checks it: promotion.continue for every application the plan promotes (restores).
  const continuePerm = usePromotionPermission(promotionContinuePermission, { namespace: ns, applications });
  const [dialog, setDialog] = useState<string | undefined>();
  if (!rows.length) return null;

  return (
    <Flex direction="column" gap="3" data-testid="plan-waves">
      <Text as="h3" variant="title-small">
        Waves
      </Text>
      <WavesTable rows={rows} continuePerm={continuePerm} onContinue={setDialog} />
      <FleetClusters plan={plan} progress={progress} applications={applications} />
      <ContinueWaveDialog
        plan={plan}
        rows={rows}
        wave={dialog}
        onClose={() => setDialog(undefined)}
        onChange={onChange}
      />
    </Flex>
  );
}
