import { sharedEtcdEndpoint } from '../support/shared-servers';
import { describeSampleApp } from './sample-app.scenarios';

describeSampleApp('etcd', () => ({ LOCK_BACKEND: 'etcd', ETCD_HOSTS: sharedEtcdEndpoint() }));
