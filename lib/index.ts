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
export type { RedisLockBackendOptions, RedisLockBackendTuning, RedisFairness, RedisLockClient } from './backends/redis/redis-lock.backend';
export { RedlockBackend } from './backends/redlock/redlock.backend';
export type { RedlockBackendOptions } from './backends/redlock/redlock.backend';
export { LockQuorumError } from './backends/redlock/lock-quorum.error';
export type { InstanceFailure } from './backends/redlock/lock-quorum.error';
export { EtcdLockBackend } from './backends/etcd/etcd-lock.backend';
export type { EtcdLockBackendOptions } from './backends/etcd/etcd-lock.backend';
export { ZooKeeperLockBackend } from './backends/zookeeper/zookeeper-lock.backend';
export type { ZooKeeperLockBackendOptions } from './backends/zookeeper/zookeeper-lock.backend';

// --- Leader election ---
export { LeaderElection } from './leader-election/leader-election.service';
export { Leadership } from './leader-election/leadership';
export type { LeadershipEvent, LeadershipRenewedEvent, LeadershipAtRiskEvent, LeadershipJson, LeadershipState } from './leader-election/leadership';
export type { LeaderElectionOptions, CampaignOptions } from './leader-election/leader-election.options';
export type { LeaderInfo } from './leader-election/election-backend.interface';
export { OnLeader } from './leader-election/on-leader.decorator';
export type { OnLeaderMetadata } from './leader-election/on-leader.decorator';
export { ON_LEADER_METADATA } from './distributed-lock.constants';
export { LeaderHealthIndicator } from './health/leader-health.indicator';
export type { LeaderHealthCheckOptions, LeaderHealthDetails, LeaderHealthResult } from './health/leader-health.indicator';

// --- Nest integration (module, decorators, interceptor, explorer) ---
export { DistributedLockModule } from './distributed-lock.module';
export { DISTRIBUTED_LOCK_MODULE_OPTIONS } from './distributed-lock.module-definition';
export type { DistributedLockModuleOptions, DistributedLockOptionsFactory } from './distributed-lock.module-definition';
export { WITH_LOCK_METADATA } from './distributed-lock.constants';
export { WithLock } from './decorators/with-lock.decorator';
export type { LockKeys, LockKeyFactory, WithLockMetadata } from './decorators/with-lock-metadata';
export { CurrentLock } from './decorators/current-lock.decorator';
export { LockInterceptor } from './interceptors/lock.interceptor';
export { LockModuleMissingError } from './interceptors/locked-handler';
export { METHOD_CONTEXT_TYPE } from './explorer/locked-method';
export { encodeKeyPart } from './key-template/encode-key-part';
export { InvalidKeyTemplateError } from './key-template/invalid-key-template.error';
export { UnresolvedPlaceholderError } from './key-template/unresolved-placeholder.error';
export { describeLockError } from './interceptors/lock-error-response';
export type { LockErrorResponse } from './interceptors/lock-error-response';

// --- Observability and operations ---
export { attachLockTelemetry } from './observability/lock-telemetry';
export type { LockTelemetryOptions } from './observability/lock-telemetry';
export { attachLockMetrics } from './observability/lock-metrics';
export type { LockMetricsOptions } from './observability/lock-metrics';
export { attachLockTracing } from './observability/lock-tracing';
export type { LockTracingOptions } from './observability/lock-tracing';
export { attachLockLogger } from './observability/lock-logger';
export { describeLockEvent } from './observability/lock-log-messages';
export { LockObservability } from './observability/lock-observability';
export type { LockObservabilityOptions } from './observability/lock-observability';
export { LockMetricNames, LockAttributes, ACQUIRE_SPAN_NAME, INSTRUMENTATION_SCOPE } from './observability/telemetry-names';
export { MissingPackageError } from './observability/missing-package.error';
export { LockHealthIndicator, HEALTH_PROBE_KEY } from './health/lock-health.indicator';
export type { LockHealthCheckOptions, LockHealthDetails, LockHealthResult } from './health/lock-health.indicator';
export { LockAdminController } from './admin/lock-admin.controller';
export type { HeldLocksReport } from './admin/lock-admin.controller';
export { DistributedLockAdminModule } from './admin/lock-admin.module';
export type { LockAdminModuleOptions } from './admin/lock-admin.module';
export { HeldLocksTracker } from './admin/held-locks.tracker';
export type { HeldLockSummary } from './admin/held-locks.tracker';
