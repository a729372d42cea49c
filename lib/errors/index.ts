export * from './lock-error';
export * from './lock-timeout.error';
export * from './lock-lost.error';
export * from './lock-backend.error';
export * from './invalid-lock-key.error';
export * from './lock-not-supported.error';
export * from './lock-service-closed.error';
export * from './lock-module-missing.error';
