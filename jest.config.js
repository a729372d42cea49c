/**
 * Tests run against real redis-server and etcd processes that test/support/global-setup.ts starts once per run
 * on free loopback ports. Timeouts are generous because the contract suite forks processes and waits out TTLs
 * on a small, often busy machine.
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.jest.json' }],
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60_000,
  // Two cores: more workers only make the timing-sensitive suites slower.
  maxWorkers: 2,
  // A test that leaves a handle open must show up as a hanging run (use --detectOpenHandles), not be hidden.
  forceExit: false,
};
