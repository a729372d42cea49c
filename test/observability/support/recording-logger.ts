import type { LoggerService } from '@nestjs/common';

export interface LoggedLine {
  readonly level: 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
  readonly message: string;
  /** The last argument, where Nest puts the context. */
  readonly context: unknown;
}

/** A LoggerService that keeps every line for assertions and prints nothing. */
export class RecordingLogger implements LoggerService {
  readonly lines: LoggedLine[] = [];

  log(message: unknown, ...rest: unknown[]): void {
    this.push('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.push('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.push('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.push('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.push('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.push('fatal', message, rest);
  }

  private push(level: LoggedLine['level'], message: unknown, rest: unknown[]): void {
    this.lines.push({ level, message: String(message), context: rest[rest.length - 1] });
  }
}
