import { redisFactory } from '../support/backends';
import { describeLockContract } from './lock-contract';

describeLockContract(redisFactory);
