export * from './forge.js';
export * from './github.js';
