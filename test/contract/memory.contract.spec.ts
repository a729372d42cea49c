import { memoryFactory } from '../support/backends';
import { describeLockContract } from './lock-contract';

describeLockContract(memoryFactory);
