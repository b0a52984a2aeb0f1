export { type ApprovalMode, type ApprovalVerdict, evaluateApprovals, stageApprovalMode } from './approvalPolicy.js';
export { parseDuration } from './duration.js';
export {
  evaluateFreeze,
  FREEZE_LOOKAHEAD_MS,
  type FreezeVerdict,
  type SourcedWindow,
  windowStarts,
} from './freezeWindows.js';
export { type SoakGate, type SoakWait, soakGate } from './soak.js';
