import { createConnection, Socket } from 'node:net';
import { join } from 'node:path';
import {
  AcceptedWrite,
  REGISTER_FENCED_ENV,
  REGISTER_HISTORY_ENV,
  RegisterReply,
  RegisterRequest,
  RegisterStats,
} from './register-protocol';
import { ForkedWorker } from '../../support/worker';

type Pending = { resolve: (reply: RegisterReply) => void; reject: (error: Error) => void };
type Operation = RegisterRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

/** The outcome of a read or a write: refused as stale, or done (with the value for a read). */
export type RegisterOutcome =
  { readonly ok: true; readonly value?: number } | { readonly ok: false; readonly highest: string };

/** A connection to the register, used by workers and by the parent for its figures. */
export class RegisterClient {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private buffered = '';
  private closed = false;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.receive(chunk));
    const fail = (error?: Error) => {
      this.closed = true;
      for (const { reject } of this.pending.values()) reject(error ?? new Error('the register connection closed'));
      this.pending.clear();
    };
    socket.on('error', fail);
    socket.on('close', () => fail());
  }

  static connect(port: number): Promise<RegisterClient> {
    return new Promise((resolve, reject) => {
      const socket = createConnection({ host: '127.0.0.1', port });
      socket.once('connect', () => resolve(new RegisterClient(socket)));
      socket.once('error', reject);
    });
  }

  async read(key: string, token: bigint): Promise<RegisterOutcome> {
    return outcome(await this.request({ op: 'read', key, token: token.toString() }));
  }

  async write(key: string, token: bigint, value: number, worker: string): Promise<RegisterOutcome> {
    return outcome(await this.request({ op: 'write', key, token: token.toString(), value, worker }));
  }

  async stats(): Promise<RegisterStats> {
    const reply = await this.request({ op: 'stats' });
    if (!('stats' in reply)) throw new Error(`unexpected stats reply ${JSON.stringify(reply)}`);
    return reply.stats;
  }

  async history(key: string): Promise<AcceptedWrite[]> {
    const reply = await this.request({ op: 'history', key });
    if (!('history' in reply)) throw new Error(`unexpected history reply ${JSON.stringify(reply)}`);
    return reply.history;
  }

  close(): void {
    this.closed = true;
    this.socket.destroy();
  }

  private request(operation: Operation): Promise<RegisterReply> {
    if (this.closed) return Promise.reject(new Error('the register connection is closed'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.write(`${JSON.stringify({ ...operation, id })}\n`);
    });
  }

  private receive(chunk: string): void {
    this.buffered += chunk;
    let newline: number;
    while ((newline = this.buffered.indexOf('\n')) >= 0) {
      const reply = JSON.parse(this.buffered.slice(0, newline)) as RegisterReply;
      this.buffered = this.buffered.slice(newline + 1);
      const waiting = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      waiting?.resolve(reply);
    }
  }
}

function outcome(reply: RegisterReply): RegisterOutcome {
  if (reply.ok) return { ok: true, ...('value' in reply && { value: reply.value }) };
  if (reply.stale) return { ok: false, highest: reply.highest };
  throw new Error(`register error: ${reply.error}`);
}

/** A running register process. */
export interface Register {
  readonly port: number;
  readonly fenced: boolean;
  /** A client for the parent's own queries (stats, history). */
  readonly client: RegisterClient;
  stop(): Promise<void>;
}

/** Forks a register process; `fenced: false` makes the control run's register, which accepts stale tokens. */
export async function startRegister(options: { fenced: boolean; history?: boolean }): Promise<Register> {
  const child = ForkedWorker.fork<never, { type: 'listening'; port: number }>(join(__dirname, 'register-process.ts'), {
    label: 'the register process',
    env: {
      [REGISTER_FENCED_ENV]: String(options.fenced),
      [REGISTER_HISTORY_ENV]: String(options.history ?? true),
    },
    stderr: 'inherit',
  });
  const { port } = await child.message('listening', 30_000);
  const client = await RegisterClient.connect(port);
  let stopping: Promise<void> | undefined;
  return {
    port,
    fenced: options.fenced,
    client,
    stop: () =>
      (stopping ??= (async () => {
        client.close();
        await child.kill('SIGKILL');
      })()),
  };
}
