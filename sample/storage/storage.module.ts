import { Module } from '@nestjs/common';
import { DocumentStore } from './document-store';

@Module({ providers: [DocumentStore], exports: [DocumentStore] })
export class StorageModule {}
