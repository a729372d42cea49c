// The public API: an explicit list, checked by the API report (api/nest-distributed-lock.api.md).
// A name not listed here is internal and may change in any release.

// --- Errors: every one extends LockError ---
export { LockError } from './errors/lock-error';
export { LockTimeoutError } from './errors/lock-timeout.error';
export { LockLostError } from './errors/lock-lost.error';
export { LockBackendError } from './errors/lock-backend.error';
export { LockQuorumError } from './errors/lock-quorum.error';
export type { InstanceFailure } from './errors/lock-quorum.error';
export { InvalidLockKeyError } from './errors/invalid-lock-key.error';
export { InvalidKeyTemplateError } from './errors/invalid-key-template.error';
export { UnresolvedPlaceholderError } from './errors/unresolved-placeholder.error';
export { LockNotSupportedError } from './errors/lock-not-supported.error';
export { LockServiceClosedError } from './errors/lock-service-closed.error';
export { LockModuleMissingError } from './errors/lock-module-missing.error';
export { MissingPackageError } from './errors/missing-package.error';
export { ScheduledLockConfigError } from './errors/scheduled-lock-config.error';

// --- The lock core ---
export { LockService } from './lock.service';
export type { LockInspection } from './lock.service';
export { LockHandle } from './lock-handle';
export type { LockState } from './lock-handle';
export type { Jsonified } from './utils/json';
export type { LockMode, LockOptions, LockServiceOptions } from './lock-options';
export type { LockRenewal, LockRenewedEvent, LockAtRiskEvent } from './lock-renewal';
export type {
  LockEvent,
  LockEventBase,
  LockAcquiredEvent,
  LockRenewedLifecycleEvent,
  LockAtRiskLifecycleEvent,
  LockLostEvent,
  LockReleasedEvent,
  LockWaitTimeoutEvent,
} from './lock-event';
export type { LockInstrumentation, AcquireTraceInfo } from './lock-instrumentation';

// --- Backends, and the contract a custom backend implements ---
export { LockBackend } from './backends/lock-backend.interface';
export type {
  AcquireRequest,
  LockGrant,
  HeldLock,
  BackendLockEvent,
  BackendInspection,
  InspectedEntry,
  BackendSupport,
} from './backends/lock-backend.interface';
export { MemoryLockBackend } from './backends/memory/memory-lock.backend';
export { RedisLockBackend } from './backends/redis/redis-lock.backend';
export type {
  RedisLockBackendOptions,
  RedisLockBackendTuning,
  RedisFairness,
  RedisLockClient,
  IoRedisLockClient,
  NodeRedisLockClient,
  RedisClientPackage,
  RedisConnectionOptions,
  RedisLockBackendConnection,
} from './backends/redis/redis-lock.backend';
export type { NodeRedisClusterLockClient, RedisConnection, RedisPipeline } from './backends/redis/redis-client';
export type { ScriptRunner } from './backends/redis/redis-script';
export { RedlockBackend } from './backends/redlock/redlock.backend';
export type { RedlockBackendOptions } from './backends/redlock/redlock.backend';
export { EtcdLockBackend } from './backends/etcd/etcd-lock.backend';
export type { EtcdLockBackendOptions, EtcdClient, EtcdConnectionOptions } from './backends/etcd/etcd-lock.backend';
export { ZooKeeperLockBackend } from './backends/zookeeper/zookeeper-lock.backend';
export type {
  ZooKeeperAcl,
  ZooKeeperAuthInfo,
  ZooKeeperClient,
  ZooKeeperLockBackendOptions,
} from './backends/zookeeper/zookeeper-lock.backend';

// --- Leader election ---
export { LeaderElection } from './leader-election/leader-election.service';
export { Leadership } from './leader-election/leadership';
export type {
  LeadershipEvent,
  LeadershipRenewedEvent,
  LeadershipAtRiskEvent,
  LeadershipJson,
  LeadershipState,
} from './leader-election/leadership';
export type { LeaderElectionOptions, CampaignOptions } from './leader-election/leader-election.options';
export type { LeaderInfo } from './leader-election/election-backend.interface';
export { OnLeader } from './leader-election/on-leader.decorator';
export { LeaderHealthIndicator } from './health/leader-health.indicator';
export type {
  LeaderHealthCheckOptions,
  LeaderHealthDetails,
  LeaderHealthResult,
} from './health/leader-health.indicator';

// --- Run-once scheduled jobs (@nestjs/schedule) ---
export { ScheduledLock } from './schedule/scheduled-lock.decorator';
export type { ScheduledLockOptions } from './schedule/scheduled-lock-options';

// --- Nest integration ---
export { DistributedLockModule } from './distributed-lock.module';
export type {
  DistributedLockModuleOptions,
  DistributedLockModuleRootOptions,
  DistributedLockModuleAsyncOptions,
  DistributedLockOptionsFactory,
} from './distributed-lock.module-definition';
export { WithLock } from './decorators/with-lock.decorator';
export type { LockKeys, LockKeyFactory, WithLockMetadata } from './decorators/with-lock-metadata';
export { CurrentLock } from './decorators/current-lock.decorator';
export { LockInterceptor } from './interceptors/lock.interceptor';
export { describeLockError } from './interceptors/lock-error-response';
export type { LockErrorResponse } from './interceptors/lock-error-response';
export { encodeKeyPart } from './key-template/encode-key-part';

// --- Observability and operations ---
export { attachLockTelemetry } from './observability/lock-telemetry';
export type { LockTelemetryOptions } from './observability/lock-telemetry';
export type { LockMetricsOptions } from './observability/lock-metrics';
export type { LockTracingOptions } from './observability/lock-tracing';
export type { LockObservabilityOptions } from './observability/lock-observability.options';
export type { OpenTelemetryMeterProvider, OpenTelemetryTracerProvider } from './observability/opentelemetry-providers';
export { attachLockLogger } from './observability/lock-logger';
export type { HealthResult } from './health/health-result';
export { LockHealthIndicator } from './health/lock-health.indicator';
export type { LockHealthCheckOptions, LockHealthDetails, LockHealthResult } from './health/lock-health.indicator';
export { DistributedLockAdminModule } from './admin/lock-admin.module';
export type { LockAdminModuleOptions } from './admin/lock-admin.module';
export { LockAdminController } from './admin/lock-admin.controller';
export type { HeldLocksReport } from './admin/lock-admin.controller';
export { HeldLocksTracker } from './admin/held-locks.tracker';
export type { HeldLockSummary } from './admin/held-locks.tracker';
