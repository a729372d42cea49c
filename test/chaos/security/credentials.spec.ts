import { Test } from '@nestjs/testing';
import { Etcd3 } from 'etcd3';
import { inspect } from 'node:util';
import { EtcdLockBackend, EtcdLockBackendOptions } from '../../../lib/backends/etcd/etcd-lock.backend';
import type { LockBackend } from '../../../lib/backends/lock-backend.interface';
import { RedisLockBackend, RedisLockBackendOptions } from '../../../lib/backends/redis/redis-lock.backend';
import { DistributedLockModule } from '../../../lib/distributed-lock.module';
import { LockBackendError } from '../../../lib/errors';
import { LockService } from '../../../lib/lock.service';
import { startEtcd, TestEtcdServer } from '../../support/etcd-server';
import { freeTestPort } from '../../support/free-port';
import { startRedis, TestRedisServer } from '../../support/redis-server';
import { makeTestCertificates, TestCertificates } from './certificates';
import { startTlsEtcd, TlsEtcd } from './tls-etcd';

const REQUIREPASS = 'requirepass-Secret-7f3a';
const ACL_PASSWORD = 'acl-Secret-91c2';
const WRONG_PASSWORD = 'wrong-Secret-55e0';
const ETCD_ROOT_PASSWORD = 'etcd-root-Secret-0b1d';
const ETCD_LOCKER_PASSWORD = 'etcd-locker-Secret-c4a8';
const SECRETS = [REQUIREPASS, ACL_PASSWORD, WRONG_PASSWORD, ETCD_ROOT_PASSWORD, ETCD_LOCKER_PASSWORD];

const services: LockService[] = [];

function service(backend: LockBackend, keyPrefix = 'cred'): LockService {
  const locks = new LockService(backend, { keyPrefix, operationTimeout: 3_000 });
  services.push(locks);
  return locks;
}

afterEach(async () => {
  await Promise.allSettled(services.splice(0).map((locks) => locks.close()));
});

/** Acquires and releases once; resolves the fencing token. */
async function lockOnce(locks: LockService): Promise<bigint> {
  const lock = await locks.acquire('account:1', { ttl: 5_000, waitTimeout: 5_000 });
  await lock.release();
  return lock.fencingToken;
}

/** The first call's rejection: a LockBackendError that names no secret, however it is printed or logged. */
async function failureOf(locks: LockService): Promise<LockBackendError> {
  const error = await locks.acquire('account:1', { ttl: 5_000, waitTimeout: 2_000 }).then(
    () => new Error('granted with wrong credentials'),
    (rejection: unknown) => rejection,
  );
  expect(error).toBeInstanceOf(LockBackendError);
  return error as LockBackendError;
}

/** Everything an app might log about an error: message, stack, util.inspect with its whole cause chain, JSON. */
function printed(error: Error): Record<string, string> {
  return {
    message: error.message,
    stack: String(error.stack),
    'util.inspect (console.error, most loggers)': inspect(error, { depth: Infinity }),
    'JSON.stringify': JSON.stringify(error),
  };
}

function expectNoSecret(error: Error): void {
  const leakedIn = Object.entries(printed(error))
    .filter(([, text]) => SECRETS.some((secret) => text.includes(secret)))
    .map(([where]) => where);
  expect({ leakedIn }).toEqual({ leakedIn: [] });
}

describe('Redis with credentials and TLS', () => {
  let redis: TestRedisServer;
  let tlsPort: number;
  let certificates: TestCertificates;

  const backend = (options: RedisLockBackendOptions) => new RedisLockBackend(options);
  const url = (auth: string, port = redis.port, scheme = 'redis') => `${scheme}://${auth}@127.0.0.1:${port}`;

  beforeAll(async () => {
    certificates = makeTestCertificates();
    tlsPort = await freeTestPort();
    redis = await startRedis({
      password: REQUIREPASS,
      extraArgs: [
        '--tls-port',
        String(tlsPort),
        '--tls-cert-file',
        certificates.certFile,
        '--tls-key-file',
        certificates.keyFile,
        '--tls-ca-cert-file',
        certificates.caFile,
        '--tls-auth-clients',
        'no',
        // An ACL user besides the default user's requirepass.
        '--user',
        'locker',
        'on',
        `>${ACL_PASSWORD}`,
        '~*',
        '&*',
        '+@all',
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await redis?.stop();
    certificates?.remove();
  });

  it('locks with requirepass', async () => {
    expect(await lockOnce(service(backend({ url: url(`:${REQUIREPASS}`) })))).toBeGreaterThan(0n);
  });

  it('locks as an ACL user', async () => {
    expect(await lockOnce(service(backend({ url: url(`locker:${ACL_PASSWORD}`) })))).toBeGreaterThan(0n);
  });

  it('locks over TLS, verifying the server against the CA', async () => {
    const locks = service(
      backend({
        url: url(`locker:${ACL_PASSWORD}`, tlsPort, 'rediss'),
        redisOptions: { tls: { ca: certificates.ca } },
      }),
    );
    expect(await lockOnce(locks)).toBeGreaterThan(0n);
  });

  it.each([
    ['a wrong requirepass', () => `:${WRONG_PASSWORD}`],
    ['a wrong ACL password', () => `locker:${WRONG_PASSWORD}`],
  ])('with %s, the first call fails with a LockBackendError that names no secret', async (_label, auth) => {
    const error = await failureOf(service(backend({ url: url(auth()) })));
    expect(error.message).toMatch(/WRONGPASS/);
    expectNoSecret(error);
  });

  it('without a password, the first call fails with a LockBackendError (NOAUTH)', async () => {
    const error = await failureOf(service(backend({ url: `redis://127.0.0.1:${redis.port}` })));
    expect(error.message).toMatch(/NOAUTH/);
  });

  it('refuses a TLS server whose certificate its CA did not sign, with a LockBackendError', async () => {
    const locks = service(
      backend({
        url: url(`locker:${ACL_PASSWORD}`, tlsPort, 'rediss'),
        redisOptions: { tls: { ca: certificates.otherCa } },
      }),
    );
    expectNoSecret(await failureOf(locks));
  });

  it('through DistributedLockModule: the app starts, and its first lock call fails typed, naming no secret', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRoot({
          backend: backend({ url: url(`:${WRONG_PASSWORD}`) }),
          keyPrefix: 'cred',
          operationTimeout: 3_000,
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const error = await app
        .get(LockService)
        .isLocked('account:1')
        .then(
          () => new Error('answered with a wrong password'),
          (rejection: unknown) => rejection as Error,
        );
      expect(error).toBeInstanceOf(LockBackendError);
      expectNoSecret(error);
    } finally {
      await app.close();
    }
  });
});

describe('etcd with authentication', () => {
  let etcd: TestEtcdServer;
  const backend = (options: EtcdLockBackendOptions) => new EtcdLockBackend(options);

  beforeAll(async () => {
    etcd = await startEtcd();
    const admin = new Etcd3({ hosts: etcd.endpoint });
    try {
      await admin.user('root').create(ETCD_ROOT_PASSWORD);
      await admin.role('root').create();
      await admin.user('root').addRole('root');
      // A user that may only touch its own namespace.
      await admin.role('lockers').create();
      await admin.role('lockers').grant({ permission: 'Readwrite', range: admin.range({ prefix: 'cred/' }) });
      await admin.user('locker').create(ETCD_LOCKER_PASSWORD);
      await admin.user('locker').addRole('lockers');
      await admin.auth.authEnable({});
    } finally {
      admin.close();
    }
  }, 60_000);

  afterAll(async () => {
    await etcd?.stop();
  });

  it('locks as root, and as a user limited to its namespace', async () => {
    expect(
      await lockOnce(
        service(backend({ hosts: etcd.endpoint, auth: { username: 'root', password: ETCD_ROOT_PASSWORD } })),
      ),
    ).toBeGreaterThan(0n);
    expect(
      await lockOnce(
        service(backend({ hosts: etcd.endpoint, auth: { username: 'locker', password: ETCD_LOCKER_PASSWORD } })),
      ),
    ).toBeGreaterThan(0n);
  });

  it('a user outside its namespace gets a LockBackendError saying permission denied', async () => {
    const locks = service(
      backend({ hosts: etcd.endpoint, auth: { username: 'locker', password: ETCD_LOCKER_PASSWORD } }),
      'elsewhere',
    );
    const error = await failureOf(locks);
    expect(error.message).toMatch(/permission denied/i);
    expectNoSecret(error);
  });

  it('with a wrong password, the first call fails with a LockBackendError that names no secret', async () => {
    const error = await failureOf(
      service(backend({ hosts: etcd.endpoint, auth: { username: 'locker', password: WRONG_PASSWORD } })),
    );
    expect(error.message).toMatch(/authentication failed/i);
    expectNoSecret(error);
  });

  it('without credentials, the first call fails with a LockBackendError', async () => {
    await failureOf(service(backend({ hosts: etcd.endpoint })));
  });

  it('names no secret when the password is written into the host URL (gRPC repeats it in its errors)', async () => {
    const withPassword = etcd.endpoint.replace('http://', `http://locker:${WRONG_PASSWORD}@`);
    const error = await failureOf(service(backend({ hosts: withPassword })));
    expectNoSecret(error);
  });
});

describe('etcd over TLS', () => {
  let certificates: TestCertificates;
  let etcd: TlsEtcd;

  beforeAll(async () => {
    certificates = makeTestCertificates();
    etcd = await startTlsEtcd(certificates);
  }, 60_000);

  afterAll(async () => {
    await etcd?.stop();
    certificates?.remove();
  });

  it('locks, verifying the server against the CA', async () => {
    const locks = service(
      new EtcdLockBackend({ hosts: etcd.endpoint, credentials: { rootCertificate: certificates.ca } }),
    );
    expect(await lockOnce(locks)).toBeGreaterThan(0n);
  });

  it('refuses a server whose certificate its CA did not sign, with a LockBackendError', async () => {
    await failureOf(
      service(new EtcdLockBackend({ hosts: etcd.endpoint, credentials: { rootCertificate: certificates.otherCa } })),
    );
  });
});
