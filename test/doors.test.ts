// Every verb at every door. Each operation of the controller's route table is offered by the CLI,
// MCP, the Backstage backend, its scaffolder actions and Port, or this table says why not. The
// entries are checked against what each door really registers (the CLI's commander program, the
// MCP server's tool rows, the backend's route table, the scaffolder module's actions, the Port
// module's action identifiers), and docs/portals.md shows the same table: a new route, or a verb
// dropped from a door, fails here until the table and the docs say where it is offered.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigReader } from '@backstage/config';
import { BACKEND_API, CONTROLLER_API } from '@kpromo/contract';
import { readPortConfig } from '@kpromo/plugin-promotions-backend-module-port';
import { createPromotionsTemplateActions } from '@kpromo/plugin-scaffolder-backend-module-promotions';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../cli/src/program.js';
import { TOOLS } from '../controller/src/mcp/tools/index.js';
import { REPO_ROOT } from './cluster/paths.js';
import { DOORS, type Door, doorsTable, VERBS } from './doors.js';

function commandPaths(c: Command, prefix = ''): string[] {
  return c.commands.flatMap((s) => {
    const path = `${prefix}${s.name()}`;
    return [path, ...commandPaths(s, `${path} `)];
  });
}

function offered(): Record<Door, Set<string>> {
  const port = readPortConfig(new ConfigReader({ clientId: 'id', clientSecret: 's' }));
  return {
    cli: new Set(commandPaths(buildProgram())),
    mcp: new Set(TOOLS.map((t) => t.name)),
    backend: new Set(BACKEND_API.routes.map((r) => r.operationId)),
    scaffolder: new Set(createPromotionsTemplateActions({ client: {} as never }).map((a) => a.id)),
    port: new Set([
      ...Object.values(port.actions),
      'create_/update_/delete_<blueprint> (promotions.port.resourceActions)',
    ]),
  };
}

describe('every verb at every door', () => {
  it('places every operation of the route table at every door', () => {
    expect(Object.keys(VERBS).sort()).toEqual(CONTROLLER_API.routes.map((r) => r.operationId).sort());
  });

  it('each door offers what the table says it offers', () => {
    const have = offered();
    const missing = Object.entries(VERBS).flatMap(([op, d]) =>
      DOORS.flatMap((door) => {
        const e = d[door];
        return typeof e === 'string' && !have[door].has(e) ? [`${op} at ${door}: ${e} is not offered`] : [];
      }),
    );
    expect(missing).toEqual([]);
  });

  it('a verb that changes something is offered at every door a person uses, or says why not', () => {
    const writes = CONTROLLER_API.routes.filter((r) => r.method !== 'get').map((r) => r.operationId);
    const gaps = writes.flatMap((op) =>
      DOORS.filter((door) => {
        const e = VERBS[op]?.[door];
        return !e || (typeof e !== 'string' && !e.no);
      }).map((door) => `${op} at ${door}`),
    );
    expect(gaps).toEqual([]);
  });

  it('docs/portals.md shows this table', () => {
    const doc = readFileSync(join(REPO_ROOT, 'docs/portals.md'), 'utf8');
    expect(doc).toContain(doorsTable());
  });
});
