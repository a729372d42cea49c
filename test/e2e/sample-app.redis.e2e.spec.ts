import { sharedRedisUrl } from '../support/shared-servers';
import { describeSampleApp } from './sample-app.scenarios';

describeSampleApp('redis', () => ({ LOCK_BACKEND: 'redis', REDIS_URL: sharedRedisUrl() }));
