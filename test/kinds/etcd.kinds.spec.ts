import { etcdFactory } from '../support/backends';
import { describeKindsContract } from './kinds-contract';

describeKindsContract(etcdFactory);
