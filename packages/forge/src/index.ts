export * from './forge.js';
export * from './gitea.js';
