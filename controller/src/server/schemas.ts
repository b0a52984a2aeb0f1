// The route schemas are the wire contract's (@kpromo/contract), shared with every other door.
export {
  ApplicationsQuery,
  ApproveBody,
  ContinueBody,
  CreatePlanBody,
  DiffQuery,
  NamespaceQuery,
  PlanParams,
  ResourceActionBody,
  RollbackBody,
} from '@kpromo/contract';

// Every door parses its input the same way (api/input.ts).
export { parseInput } from '../api/input.js';
