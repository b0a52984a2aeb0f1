export { adaptLogger, catalogModulePromotions as default, catalogModulePromotions } from './module.js';
export { PromotionsEntityProvider } from './provider.js';
export {
  ANNOTATION,
  backstageName,
  DEFAULT_OWNER,
  ENTITY_NAMINGS,
  type EntityNaming,
  entityName,
  KIND_BY_BLUEPRINT,
  type MappingOptions,
  ownerRef,
  toBackstageEntity,
} from './toBackstageEntity.js';
