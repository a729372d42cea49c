import { ArgumentsHost, Catch, ConflictException } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { StaleWriteError } from './stale-write.error';

/** A write refused by its fencing token is a conflict the client can retry, not a server error. */
@Catch(StaleWriteError)
export class StaleWriteFilter extends BaseExceptionFilter {
  override catch(error: StaleWriteError, host: ArgumentsHost): void {
    super.catch(
      new ConflictException({ statusCode: 409, error: 'Conflict', code: error.name, message: error.message }),
      host,
    );
  }
}
