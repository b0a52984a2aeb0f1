export * from './headers.js';
export * from './inputs.js';
export * from './openapi.js';
export * from './pattern.js';
export * from './planProgress.js';
export * from './routes.js';
export * from './skipped.js';
export * from './views.js';
