import { execFile } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { createClient } from 'node-zookeeper-client';
import { containSocketHandlerErrors } from '../../lib/backends/zookeeper/owned-client';
import { freeTestPort } from './free-port';
import {
  findBinary,
  launchServer,
  removeServerDir,
  retireServer,
  retryOnPortTaken,
  serverDir,
  type ServerControls,
  SpawnedServer,
} from './server-process';

/** What CI (and a developer) must install for the ZooKeeper tests: the server's jars, Curator's, a JDK. */
export const ZOOKEEPER_INSTALL_HINT = 'apt-get install -y zookeeper libcurator-recipes-java default-jdk-headless';

/** Debian puts every Java library here; zookeeper.jar's manifest Class-Path pulls in its own dependencies. */
export const JAVA_LIBRARY_DIR = '/usr/share/java';
const SERVER_JAR = join(JAVA_LIBRARY_DIR, 'zookeeper.jar');
/** Optional: without an SLF4J binding the server prints nothing, which makes start-up failures opaque. */
const LOG_BINDING_JAR = join(JAVA_LIBRARY_DIR, 'slf4j-simple.jar');

export interface ZooKeeperServerOptions {
  /**
   * ZooKeeper's time unit, ms. Sessions may last from 2 to 20 ticks, so the default 500 lets tests use
   * session timeouts from 1 s to 10 s (Debian's default 2 000 would make the shortest session 4 s).
   */
  tickTime?: number;
  /** fsync the transaction log on every write, as production does (default false: test data is thrown away). */
  forceSync?: boolean;
  /** Four-letter-word commands to allow (e.g. 'mntr' for the bench's request counts); default none. */
  fourLetterWords?: readonly string[];
}

/** pause() stops the server's session clock too. */
export interface TestZooKeeperServer extends ServerControls {
  /** `127.0.0.1:<port>`, what node-zookeeper-client and Curator take. */
  readonly connectionString: string;
  readonly tickTime: number;
}

const JAVA_OPTIONS = [
  // A small, quick-starting JVM: the tests need a few MB of data and no peak throughput.
  '-Xms32m',
  '-Xmx256m',
  '-XX:+UseSerialGC',
  '-XX:TieredStopAtLevel=1',
  '-Djava.net.preferIPv4Stack=true',
  '-Dorg.slf4j.simpleLogger.defaultLogLevel=error',
];

/**
 * Starts a standalone ZooKeeper 3.8 (Debian's `zookeeper` package) on a free loopback port with a temp data
 * dir, no admin server and no four-letter-word commands (unless asked for), and waits until it grants a session.
 * Start one per spec file: the JVM takes a second or two.
 */
export async function startZooKeeper(options: ZooKeeperServerOptions = {}): Promise<TestZooKeeperServer> {
  const java = findJava();
  const classpath = zookeeperServerClasspath();
  const tickTime = options.tickTime ?? 500;
  const forceSync = options.forceSync ?? false;
  const fourLetterWords = options.fourLetterWords ?? [];
  return retryOnPortTaken(async () => {
    const port = await freeTestPort();
    // The port in the dir name puts it on the JVM's command line, which is what orphan reaping checks.
    const dir = serverDir(`zookeeper-${port}`);
    try {
      const server = await launch(java, classpath, port, tickTime, { forceSync, fourLetterWords }, dir);
      return wrap(server, port, tickTime, dir);
    } catch (error) {
      removeServerDir(dir);
      throw error;
    }
  });
}

/** The `java` launcher (or another JDK tool, e.g. `javac`) on PATH, or an error that says what to install. */
export function findJava(tool: 'java' | 'javac' = 'java'): string {
  return findBinary(
    tool,
    `The ZooKeeper tests run a real ZooKeeper server and a Curator client: ${ZOOKEEPER_INSTALL_HINT}`,
  );
}

/** Classpath of the server, or an error that says what to install. */
export function zookeeperServerClasspath(): string {
  requireJar(SERVER_JAR);
  try {
    accessSync(LOG_BINDING_JAR, constants.R_OK);
    return [SERVER_JAR, LOG_BINDING_JAR].join(delimiter);
  } catch {
    return SERVER_JAR;
  }
}

export function requireJar(path: string): string {
  try {
    accessSync(path, constants.R_OK);
    return path;
  } catch {
    throw new Error(
      `${path} is missing. The ZooKeeper tests need Debian's ZooKeeper and Curator jars: ${ZOOKEEPER_INSTALL_HINT}`,
    );
  }
}

async function launch(
  java: string,
  classpath: string,
  port: number,
  tickTime: number,
  { forceSync, fourLetterWords }: { forceSync: boolean; fourLetterWords: readonly string[] },
  dir: string,
): Promise<SpawnedServer> {
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  const config = join(dir, 'zoo.cfg');
  writeFileSync(
    config,
    [
      `tickTime=${tickTime}`,
      `dataDir=${dataDir}`,
      `clientPort=${port}`,
      'clientPortAddress=127.0.0.1',
      'admin.enableServer=false',
      `4lw.commands.whitelist=${fourLetterWords.join(',')}`,
      'maxClientCnxns=0',
      `forceSync=${forceSync ? 'yes' : 'no'}`,
      '',
    ].join('\n'),
  );
  let pid = -1;
  try {
    return await launchServer({
      what: `ZooKeeper on 127.0.0.1:${port}`,
      binary: java,
      args: [...JAVA_OPTIONS, '-cp', classpath, 'org.apache.zookeeper.server.ZooKeeperServerMain', config],
      probe: () => grantsSession(`127.0.0.1:${port}`),
      readyTimeoutMs: 30_000,
      dir,
      onSpawn: (server) => recordForReaping((pid = server.pid), port),
    });
  } catch (error) {
    forgetForReaping(pid);
    throw error;
  }
}

function wrap(server: SpawnedServer, port: number, tickTime: number, dir: string): TestZooKeeperServer {
  let stopped = false;
  return {
    connectionString: `127.0.0.1:${port}`,
    host: '127.0.0.1',
    port,
    pid: server.pid,
    tickTime,
    async stop() {
      if (stopped) return;
      stopped = true;
      await retireServer(server);
      forgetForReaping(server.pid);
      removeServerDir(dir);
    },
    kill: (signal?: NodeJS.Signals) => server.kill(signal),
    pause: () => server.pause(),
    resume: () => server.resume(),
  };
}

/** True once the server hands out a session within a second. */
export function grantsSession(connectionString: string, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const client = createClient(connectionString, { sessionTimeout: 2_000, spinDelay: 100 });
    // Closed before connecting, the client can misread a late connect reply and throw from its socket handler.
    containSocketHandlerErrors(client);
    const timer = setTimeout(() => finish(false), timeoutMs);
    const finish = (ok: boolean) => {
      clearTimeout(timer);
      client.removeAllListeners('connected');
      client.close();
      // The closeSession request needs no answer here; drop the socket so no retry timer lingers.
      (
        client as unknown as { connectionManager: { socket?: { destroy(): void } } }
      ).connectionManager.socket?.destroy();
      resolve(ok);
    };
    client.once('connected', () => finish(true));
    client.connect();
  });
}

/**
 * The shared test servers are reaped by test/support/shared-servers.ts when a run was SIGKILLed; this server
 * is started by a spec, so it leaves its own record in the same directory and format (one file per server).
 */
const PID_DIR = join(tmpdir(), 'ndl-test-servers');
const SERVER_MAIN = 'ZooKeeperServerMain';

function pidFile(serverPid: number): string {
  return join(PID_DIR, `${process.pid}-zookeeper-${serverPid}.json`);
}

function recordForReaping(serverPid: number, port: number): void {
  mkdirSync(PID_DIR, { recursive: true });
  writeFileSync(
    pidFile(serverPid),
    JSON.stringify({ owner: process.pid, servers: [{ pid: serverPid, binary: SERVER_MAIN, port }] }),
  );
}

function forgetForReaping(serverPid: number): void {
  rmSync(pidFile(serverPid), { force: true });
}

/** Curator 5.4 and ZooKeeper 3.8 from Debian; their manifests name the rest (guava, netty, jute). */
const CURATOR_JARS = [
  'curator-recipes.jar',
  'curator-framework.jar',
  'curator-client.jar',
  'zookeeper.jar',
  'zookeeper-jute.jar',
  'guava.jar',
  'slf4j-api.jar',
];

/** A Java program compiled against Debian's Curator jars, and the classpath that runs it. */
export interface CuratorProgram {
  readonly classpath: string;
  /** Deletes the compiled classes. */
  dispose(): void;
}

/** Compiles `source` (a .java file) against Curator; slf4j-nop keeps Curator quiet, so its own lines are the protocol. */
export async function compileCuratorProgram(source: string): Promise<CuratorProgram> {
  const jars = CURATOR_JARS.map((jar) => requireJar(join(JAVA_LIBRARY_DIR, jar)));
  const classes = mkdtempSync(join(tmpdir(), 'ndl-curator-'));
  try {
    await promisify(execFile)(findJava('javac'), ['-d', classes, '-cp', jars.join(delimiter), source]);
  } catch (error) {
    rmSync(classes, { recursive: true, force: true });
    throw error;
  }
  return {
    classpath: [classes, ...jars, join(JAVA_LIBRARY_DIR, 'slf4j-nop.jar')].join(delimiter),
    dispose: () => rmSync(classes, { recursive: true, force: true }),
  };
}
