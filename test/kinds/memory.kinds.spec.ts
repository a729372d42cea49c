import { memoryFactory } from '../support/backends';
import { describeKindsContract } from './kinds-contract';

describeKindsContract(memoryFactory);
