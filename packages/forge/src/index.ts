export * from './forge.js';
export * from './gitea.js';
export * from './github.js';
