export * from './permissions.js';
export * from './types.js';
