// Every verb at every door: where the CLI, MCP, the Backstage backend, its scaffolder actions and
// Port offer each operation of the controller's route table, or why a door does not. Checked
// against what each door registers by doors.test.ts; docs/portals.md shows doorsTable().
export const DOORS = ['cli', 'mcp', 'backend', 'scaffolder', 'port'] as const;
export type Door = (typeof DOORS)[number];
/** Where a door offers the verb (a command, tool, operation, action id), or why it does not. */
export type Entry = string | { no: string };

const READ_IN_PORT = { no: "Port reads the exporter's entities, not the API" };
const READ_IN_TEMPLATE = { no: 'a template reads what it needs with kpromo:release:status' };
const CONTROLLER_ONLY = { no: "the controller's own door for a non-person caller" };

export const VERBS: Record<string, Record<Door, Entry>> = {
  listApplications: {
    cli: 'apps',
    mcp: 'list',
    backend: 'listApplications',
    scaffolder: 'kpromo:release:status',
    port: READ_IN_PORT,
  },
  listEnvironments: {
    cli: 'envs',
    mcp: 'list',
    backend: 'listEnvironments',
    scaffolder: READ_IN_TEMPLATE,
    port: READ_IN_PORT,
  },
  diff: { cli: 'diff', mcp: 'diff', backend: 'diff', scaffolder: READ_IN_TEMPLATE, port: 'kpromo_promote' },
  listFlows: {
    cli: { no: '`kpromo envs` shows each environment in pipeline order' },
    mcp: { no: 'list shows environments in pipeline order' },
    backend: 'listFlows',
    scaffolder: READ_IN_TEMPLATE,
    port: READ_IN_PORT,
  },
  listPlans: { cli: 'plan list', mcp: 'list', backend: 'listPlans', scaffolder: READ_IN_TEMPLATE, port: READ_IN_PORT },
  createPlan: {
    cli: 'plan create',
    mcp: 'plan',
    backend: 'createPlan',
    scaffolder: 'kpromo:plan:create',
    port: 'kpromo_promote',
  },
  getPlan: {
    cli: 'plan get',
    mcp: 'state',
    backend: 'getPlan',
    scaffolder: 'kpromo:release:status',
    port: READ_IN_PORT,
  },
  approvePlan: {
    cli: 'plan approve',
    mcp: 'promote',
    backend: 'approvePlan',
    scaffolder: 'kpromo:plan:promote',
    port: 'kpromo_promote',
  },
  continuePlan: {
    cli: 'plan continue',
    mcp: 'continue_wave',
    backend: 'continuePlan',
    scaffolder: 'kpromo:plan:continue',
    port: 'kpromo_continue',
  },
  rollbackPlan: {
    cli: 'plan rollback',
    mcp: 'rollback',
    backend: 'rollbackPlan',
    scaffolder: 'kpromo:plan:rollback',
    port: 'kpromo_rollback',
  },
  listHistory: {
    cli: { no: 'not yet: the history is read in the portal and through MCP' },
    mcp: 'history',
    backend: 'listHistory',
    scaffolder: READ_IN_TEMPLATE,
    port: READ_IN_PORT,
  },
  doraInsights: {
    cli: { no: 'not yet: DORA figures are read in the portal and through MCP' },
    mcp: 'dora',
    backend: 'doraInsights',
    scaffolder: READ_IN_TEMPLATE,
    port: READ_IN_PORT,
  },
  applyResource: {
    cli: { no: 'kubectl writes custom resources as the user' },
    mcp: { no: 'kubectl writes custom resources as the user' },
    backend: { no: "only the backend's signed Port webhook calls it" },
    scaffolder: { no: 'a template writes resources through a pull request' },
    port: 'create_/update_/delete_<blueprint> (promotions.port.resourceActions)',
  },
  proposeAdoption: {
    cli: 'adopt',
    mcp: 'propose_adoption',
    backend: 'proposeAdoption',
    scaffolder: 'kpromo:adopt:propose',
    port: 'kpromo_adopt',
  },
  listLineStops: {
    cli: 'line list',
    mcp: 'line_stops',
    backend: 'listLineStops',
    scaffolder: READ_IN_TEMPLATE,
    port: READ_IN_PORT,
  },
  stopLine: {
    cli: 'line stop',
    mcp: 'stop_line',
    backend: 'stopLine',
    scaffolder: { no: 'stopping the line is an incident action, not a template' },
    port: 'kpromo_stop_line',
  },
  liftLineStop: {
    cli: 'line lift',
    mcp: 'resume_line',
    backend: 'liftLineStop',
    scaffolder: { no: 'lifting the line is an incident action, not a template' },
    port: 'kpromo_resume_line',
  },
  receiveAlerts: {
    cli: CONTROLLER_ONLY,
    mcp: CONTROLLER_ONLY,
    backend: { no: 'Alertmanager calls the controller itself' },
    scaffolder: CONTROLLER_ONLY,
    port: CONTROLLER_ONLY,
  },
};

/** The table as docs/portals.md shows it. */
export function doorsTable(): string {
  const cell = (e: Entry) => (typeof e === 'string' ? `\`${e}\`` : `— (${e.no})`);
  return [
    `| operation | ${DOORS.join(' | ')} |`,
    `|---|${DOORS.map(() => '---').join('|')}|`,
    ...Object.entries(VERBS).map(([op, d]) => `| \`${op}\` | ${DOORS.map((x) => cell(d[x])).join(' | ')} |`),
  ].join('\n');
}
