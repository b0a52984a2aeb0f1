// `@kpromo/controller/supplychain`: signature verification and promotion attestations, for tools
// outside the controller (`kpromo verify`): the same code the controller verifies and signs with.
export { attestPromotion, type PromotionFacts, type PromotionPredicate, promotionStatement } from './attestation.js';
export { type BundleVerdict, SIGSTORE_BUNDLE_V03, signStatement, verifyBundle } from './bundle.js';
export type { SigningKey, TrustedKey } from './keys.js';
export { type ImageReport, isImageSignature, verifyImage } from './report.js';
