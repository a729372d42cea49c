import { Module } from '@nestjs/common';
import { StorageModule } from '../storage/storage.module';
import { AccountsController } from './accounts.controller';
import { AccountsService } from './accounts.service';

@Module({
  imports: [StorageModule],
  controllers: [AccountsController],
  providers: [AccountsService],
})
export class AccountsModule {}
