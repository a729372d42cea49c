// The public API. Nothing else is exported from the package root.
export * from './errors';
export * from './lock-options';
export * from './lock-renewal';
export * from './lock-event';
export * from './lock-instrumentation';
export { LockHandle } from './lock-handle';
export { LockService } from './lock.service';
export type { LockInspection } from './lock.service';
export { LockBackend } from './backends/lock-backend.interface';
export type { AcquireRequest, LockGrant, HeldLock, BackendLockEvent, BackendInspection, InspectedEntry, BackendSupport } from './backends/lock-backend.interface';
export { MemoryLockBackend } from './backends/memory/memory-lock.backend';
export { RedisLockBackend } from './backends/redis/redis-lock.backend';
export type { RedisLockBackendOptions } from './backends/redis/redis-lock.backend';
export { EtcdLockBackend } from './backends/etcd/etcd-lock.backend';
export type { EtcdLockBackendOptions } from './backends/etcd/etcd-lock.backend';

// --- Nest integration (module, decorators, interceptor, explorer) ---
export { DistributedLockModule } from './distributed-lock.module';
export { DISTRIBUTED_LOCK_MODULE_OPTIONS } from './distributed-lock.module-definition';
export type { DistributedLockModuleOptions, DistributedLockOptionsFactory } from './distributed-lock.module-definition';
export { WITH_LOCK_METADATA, REQUEST_LOCKS } from './distributed-lock.constants';
export { WithLock } from './decorators/with-lock.decorator';
export type { LockKeys, LockKeyFactory, WithLockMetadata } from './decorators/with-lock-metadata';
export { CurrentLock } from './decorators/current-lock.decorator';
export { LockInterceptor } from './interceptors/lock.interceptor';
export { METHOD_CONTEXT_TYPE } from './explorer/locked-method';
export { encodeKeyPart } from './key-template/encode-key-part';
export { InvalidKeyTemplateError } from './key-template/invalid-key-template.error';
export { UnresolvedPlaceholderError } from './key-template/unresolved-placeholder.error';
export { describeLockError } from './interceptors/lock-error-response';
export type { LockErrorResponse } from './interceptors/lock-error-response';
