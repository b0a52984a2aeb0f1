export { sparkSegments, sparkText } from './charts.js';
export { PLAN_CARD_HTML } from './generated/planCard.js';
export { awaitsApproval, STATUS_META } from './meta.js';
export type { CardOrder, CardPlan, CardSignature } from './plan.js';
