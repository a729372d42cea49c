import { etcdFactory } from '../support/backends';
import { describeLockContract } from './lock-contract';

describeLockContract(etcdFactory);
