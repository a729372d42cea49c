import { LockError } from './lock-error';
import { installCommand } from '../utils/install-command';

/**
 * An optional peer dependency is not installed, and the app asked for something that needs it: a backend
 * (ioredis, etcd3, node-zookeeper-client), telemetry (@opentelemetry/api) or the health indicator (@nestjs/terminus).
 */
export class MissingPackageError extends LockError {
  override readonly name = 'MissingPackageError';

  constructor(
    /** The npm package to install, e.g. 'ioredis'. */
    readonly packageName: string,
    /** What needs it, e.g. 'The Redis backend' or 'Lock metrics'. */
    feature: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${feature} needs the "${packageName}" package, which is not installed. Run: ${installCommand(packageName)}`,
      options,
    );
  }
}
