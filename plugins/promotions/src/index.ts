// Legacy frontend system (createPlugin / createRoutableExtension), for apps not yet on the new system.
// New-system apps import the default export of '@kpromo/plugin-promotions/alpha'.

export { AssistantPanel } from './components/AssistantPanel';
export { isDestructive, schemaToFields, toArguments } from './components/assistantSchema';
export { PipelinePage } from './components/PipelinePage';
export { PlanTimeline, planTimeline } from './components/PlanTimeline';
export { PlanDetails, PlanView, planChanges } from './components/PlanView';
export { ReleasesTable } from './components/ReleasesTable';
export {
  EntityPromotionsContent,
  EnvironmentPromotionsContent,
  legacyPromotionsPlugin,
  PromotionsPage,
} from './legacy';
