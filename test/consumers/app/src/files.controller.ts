import { Body, Controller, Get, Param, Put, Query } from '@nestjs/common';
import { CurrentLock, LockBackend, LockHandle, LockService, WithLock } from 'nest-distributed-lock';
import { FilesService } from './files.service.js';

@Controller()
export class FilesController {
  constructor(
    private readonly files: FilesService,
    private readonly locks: LockService,
    // Injected by its type, no @Inject: what tsc records for the parameter must be the module's token.
    private readonly backend: LockBackend,
  ) {}

  /** The backend the module provides. */
  @Get('backend')
  backendKind() {
    return { kind: this.backend.kind };
  }

  /** Waits for the file's lock; the handle goes back to the client as JSON (the fencing token as a string). */
  @Put('files/:id')
  @WithLock('file:<<id>>')
  async write(@Param('id') id: string, @Body() body: { delayMs?: number }, @CurrentLock() lock: LockHandle) {
    const stored = await this.files.write(id, body.delayMs ?? 0);
    return { id, lock, ...stored };
  }

  /** Never waits: 409 with Retry-After while the file is being written. */
  @Get('files/:id/peek')
  @WithLock('file:<<id>>', { waitTimeout: 0 })
  peek(@Param('id') id: string) {
    return { id };
  }

  /** LockService injected directly. */
  @Get('files/:id/locked')
  async locked(@Param('id') id: string) {
    return { id, locked: await this.locks.isLocked(`file:${id}`) };
  }

  /** `<<query.tenant>>` with no tenant in the query answers 400, naming the placeholder. */
  @Get('reports')
  @WithLock('report:<<query.tenant>>')
  report(@Query('tenant') tenant: string) {
    return { tenant };
  }
}
