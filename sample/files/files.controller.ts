import {
  BadRequestException,
  Body,
  Controller,
  DefaultValuePipe,
  Get,
  MessageEvent,
  Param,
  ParseIntPipe,
  Post,
  Put,
  Query,
  Sse,
} from '@nestjs/common';
import { map, merge, Observable, of, share, takeUntil } from 'rxjs';
import { CurrentLock, LockHandle, LockRenewal, WithLock } from '../../lib';
import { FileView } from './file-view';
import { FilesService } from './files.service';

const MAX_EDIT_MS = 120_000;

@Controller('files')
export class FilesController {
  constructor(private readonly files: FilesService) {}

  @Get(':id')
  get(@Param('id') id: string): Promise<FileView> {
    return this.files.get(id);
  }

  /** Appends `text`. Concurrent requests for one id queue up (up to the default waitTimeout) and none is lost. */
  @Put(':id')
  @WithLock('file:<<id>>')
  put(@Param('id') id: string, @Body('text') text: unknown): Promise<FileView> {
    return this.files.append(id, requireText(text), this.files.defaultThinkMs());
  }

  /** Same, but answers 409 at once when someone else is editing the file. */
  @Put(':id/try')
  @WithLock('file:<<id>>', { waitTimeout: 0 })
  tryPut(@Param('id') id: string, @Body('text') text: unknown): Promise<FileView> {
    return this.files.append(id, requireText(text), this.files.defaultThinkMs());
  }

  /** The id comes from the body: a request without one gets 400 naming <<body.id>>. */
  @Post('append')
  @WithLock('file:<<body.id>>')
  appendByBody(@Body() body: { id: string; text: unknown }): Promise<FileView> {
    return this.files.append(String(body.id), requireText(body.text), this.files.defaultThinkMs());
  }

  /**
   * A long edit as Server-Sent Events: `locked`, then a `renewed` event each time the watchdog extends
   * the lock (every second with this ttl), then `done`. The lock is held until the stream ends; if the
   * client disconnects, the edit is cancelled and the lock released.
   */
  @Sse(':id/long-edit')
  @WithLock('file:<<id>>', { ttl: 3_000 })
  longEdit(
    @Param('id') id: string,
    @Query('text', new DefaultValuePipe('')) text: string,
    @Query('durationMs', new DefaultValuePipe(3_000), ParseIntPipe) durationMs: number,
    @CurrentLock() lock: LockHandle,
  ): Observable<MessageEvent> {
    if (durationMs < 0 || durationMs > MAX_EDIT_MS)
      throw new BadRequestException(`durationMs must be 0..${MAX_EDIT_MS}.`);
    const edit$ = cancellable((signal) => this.files.append(id, text, durationMs, signal)).pipe(share());
    return merge(
      of({
        type: 'locked',
        data: { key: lock.key, fencingToken: lock.fencingToken.toString(), expiresAt: lock.expiresAt },
      }),
      lock.renewals$.pipe(takeUntil(edit$), map(renewalEvent)),
      edit$.pipe(map((file) => ({ type: 'done', data: file }))),
    );
  }
}

/** A promise-returning job as an Observable whose unsubscription aborts the job's signal. */
function cancellable<T>(job: (signal: AbortSignal) => Promise<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    const controller = new AbortController();
    job(controller.signal).then(
      (value) => {
        subscriber.next(value);
        subscriber.complete();
      },
      (error: unknown) => subscriber.error(error),
    );
    return () => controller.abort();
  });
}

function renewalEvent(renewal: LockRenewal): MessageEvent {
  const { type, ...rest } = renewal;
  return {
    type,
    data: {
      ...rest,
      fencingToken: rest.fencingToken.toString(),
      ...('error' in rest ? { error: rest.error.message } : {}),
    },
  };
}

function requireText(text: unknown): string {
  if (typeof text !== 'string') throw new BadRequestException('Send JSON like {"text": "..."}.');
  return text;
}
