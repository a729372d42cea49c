import { Logger, type LoggerService } from '@nestjs/common';
import { LOGGER_CONTEXT } from '../distributed-lock.constants';
import type { LockEvent } from '../lock-event';
import type { LockService } from '../lock.service';
import { describeLockEvent } from './lock-log-messages';

type Level = 'verbose' | 'debug' | 'warn' | 'error';

/** Grants, releases and timeouts are routine (debug); renewals are frequent (verbose); at-risk warns; a loss is an error. */
const LEVELS: Record<LockEvent['type'], Level> = {
  acquired: 'debug',
  released: 'debug',
  timeout: 'debug',
  renewed: 'verbose',
  'at-risk': 'warn',
  lost: 'error',
};

/**
 * Logs the life of every lock of `locks` through Nest's logger, in the `DistributedLock` context.
 * Pass your own LoggerService to route the lines elsewhere. Returns a function that stops logging;
 * logging also stops when the service closes.
 */
export function attachLockLogger(locks: LockService, logger: LoggerService = new Logger(LOGGER_CONTEXT)): () => void {
  const write = writerFor(logger);
  const enabled = levelCheckFor(logger);
  // Only the event types whose level is on are even built: a debug line per grant nobody sees costs more than
  // the lock itself on the memory backend. Levels are read now; Nest sets them when the app is created.
  const types = (Object.keys(LEVELS) as LockEvent['type'][]).filter((type) => enabled(LEVELS[type]));
  const stop = locks.listenToEvents(types, (event) => write(LEVELS[event.type], describeLockEvent(event)));
  return stop;
}

/**
 * Nest's own Logger knows which levels the app enabled (`logger: ['error', ...]` at create). When the app set
 * none (the levels are unknown, e.g. a custom LoggerService), every line is passed on for it to decide.
 */
function levelCheckFor(logger: LoggerService): (level: Level) => boolean {
  if (!(logger instanceof Logger)) return () => true;
  return (level) => Logger.isLevelEnabled(level) || !Logger.isLevelEnabled('fatal');
}

/**
 * A Nest `Logger` instance carries its own context; any other LoggerService gets the context as the last
 * argument, which is Nest's convention (and `error(message, stack, context)` for errors).
 */
function writerFor(logger: LoggerService): (level: Level, message: string) => void {
  const ownContext = logger instanceof Logger;
  return (level, message) => {
    if (level === 'error') {
      if (ownContext) logger.error(message);
      else logger.error(message, undefined, LOGGER_CONTEXT);
      return;
    }
    const method = logger[level]?.bind(logger);
    if (!method) return;
    if (ownContext) method(message);
    else method(message, LOGGER_CONTEXT);
  };
}
