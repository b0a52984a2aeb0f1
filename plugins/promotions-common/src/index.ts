export * from './assistant.js';
export * from './errors.js';
export * from './namespace.js';
export * from './permissions.js';
export * from './tools.js';
export * from './types.js';
