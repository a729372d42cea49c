import { ConsoleLogger } from '@nestjs/common';

/** A Nest logger that keeps warnings and errors for assertions and prints nothing. */
export class CaptureLogger extends ConsoleLogger {
  readonly warnings: string[] = [];
  readonly errors: string[] = [];

  override warn(message: unknown): void {
    this.warnings.push(String(message));
  }

  override error(message: unknown): void {
    this.errors.push(String(message));
  }

  override log(): void {}
  override debug(): void {}
  override verbose(): void {}
}
