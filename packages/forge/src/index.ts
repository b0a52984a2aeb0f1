export * from './forge.js';
