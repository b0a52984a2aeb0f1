import pino from 'pino';

type LogFn = (obj: object, msg?: string) => void;

/** The logging surface the library uses: pino's (obj, msg) calls; Backstage loggers are adapted. */
export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): Logger;
}

export function createLogger(level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: { component: 'kpromo-exporter' } });
}
