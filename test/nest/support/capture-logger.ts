import { ConsoleLogger } from '@nestjs/common';

/** A Nest logger that keeps warnings for assertions and prints nothing. */
export class CaptureLogger extends ConsoleLogger {
  readonly warnings: string[] = [];

  override warn(message: unknown): void {
    this.warnings.push(String(message));
  }

  override log(): void {}
  override debug(): void {}
  override verbose(): void {}
  override error(): void {}
}
