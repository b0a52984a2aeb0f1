import { proposeAdoption } from './adopt.js';
import { continueWave } from './continueWave.js';
import { diff } from './diff.js';
import { dora, history } from './history.js';
import { lineStops, resumeLine, stopLine } from './lineStops.js';
import { list } from './list.js';
import { plan } from './plan.js';
import { promote } from './promote.js';
import { rollback } from './rollback.js';
import type { AnyRow } from './row.js';
import { state } from './state.js';

export { registerRow } from './row.js';

/** Every tool the server offers, registered in this order. */
export const TOOLS: readonly AnyRow[] = [
  list,
  diff,
  state,
  plan,
  promote,
  continueWave,
  rollback,
  history,
  dora,
  lineStops,
  stopLine,
  resumeLine,
  proposeAdoption,
];
