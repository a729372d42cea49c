import { redisFactory } from '../support/backends';
import { describeKindsContract } from './kinds-contract';

describeKindsContract(redisFactory);
