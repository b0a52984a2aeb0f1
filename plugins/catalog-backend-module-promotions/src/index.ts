export { adaptLogger, catalogModulePromotions as default, catalogModulePromotions } from './module.js';
export { PromotionsEntityProvider } from './provider.js';
export { ANNOTATION, backstageName, KIND_BY_BLUEPRINT, toBackstageEntity } from './toBackstageEntity.js';
