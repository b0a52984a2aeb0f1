import { type Logger, type LoggerOptions, pino } from 'pino';

export type { Logger };

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** Structured JSON logs on stdout; level from KPROMO_LOG_LEVEL (default info). */
export function createLogger(opts: LoggerOptions & { destination?: pino.DestinationStream } = {}): Logger {
  const { destination, ...options } = opts;
  const envLevel = process.env.KPROMO_LOG_LEVEL?.toLowerCase();
  if (envLevel && !LEVELS.has(envLevel)) {
    throw new Error(`KPROMO_LOG_LEVEL="${envLevel}" is not a log level; use one of ${[...LEVELS].join(', ')}`);
  }
  const base: LoggerOptions = {
    name: 'kpromo-controller',
    level: options.level ?? envLevel ?? 'info',
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    ...options,
  };
  return destination ? pino(base, destination) : pino(base);
}
