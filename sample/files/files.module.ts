import { Module } from '@nestjs/common';
import { StorageModule } from '../storage/storage.module';
import { FilesController } from './files.controller';
import { FilesService } from './files.service';
import { SnapshotJob } from './snapshot.job';

@Module({
  imports: [StorageModule],
  controllers: [FilesController],
  providers: [FilesService, SnapshotJob],
  exports: [FilesService, SnapshotJob],
})
export class FilesModule {}
