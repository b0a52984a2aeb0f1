/**
 * A controller configuration that cannot be used, with every problem found (its path and what is
 * wrong). Here, not in config.ts, so that the low-level modules reading config values (kube/) can
 * refuse one without importing the whole config schema above them.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid controller configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}
