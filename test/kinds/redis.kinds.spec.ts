import { REDIS_CLIENT_FACTORIES } from '../support/backends';
import { describeKindsContract } from './kinds-contract';

// Once per client package (ioredis; node-redis with RESP2 and RESP3): one algorithm, the same guarantees.
for (const factory of REDIS_CLIENT_FACTORIES) describeKindsContract(factory);
