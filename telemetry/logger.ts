/** One winston JSON logger built in main.ts and passed down (docs/CONVENTIONS.md#logs-and-metrics); child loggers add fields. */
import winston from 'winston';

export interface Logger {
  debug(msg: string, fields?: object): void;
  info(msg: string, fields?: object): void;
  warn(msg: string, fields?: object): void;
  error(msg: string, fields?: object): void;
  child(fields: object): Logger;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export function createLogger(level: LogLevel = 'info', stream: NodeJS.WritableStream = process.stdout): Logger {
  return winston.createLogger({
    level,
    format: winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), winston.format.json()),
    transports: [new winston.transports.Stream({ stream })],
  }) as unknown as Logger;
}

/** A logger that drops everything (unit tests, benchmarks). */
export const silentLogger: Logger = {
  debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined,
  child: () => silentLogger,
};
