/**
 * The fenced register's process (forked by register.ts). Single-threaded, so its operations are linearizable:
 * each one applies in the order it arrives. See register-protocol.ts.
 */
import { createServer, Socket } from 'node:net';
import {
  AcceptedWrite,
  KeyStats,
  REGISTER_FENCED_ENV,
  REGISTER_HISTORY_ENV,
  RegisterReply,
  RegisterRequest,
} from './register-protocol';

const fenced = process.env[REGISTER_FENCED_ENV] !== 'false';
const keepHistory = process.env[REGISTER_HISTORY_ENV] !== 'false';
const keys = new Map<string, KeyStats & { highestToken: bigint }>();
const histories = new Map<string, AcceptedWrite[]>();

function cell(key: string): KeyStats & { highestToken: bigint } {
  let found = keys.get(key);
  if (!found) {
    found = {
      value: 0,
      accepted: 0,
      rejectedReads: 0,
      rejectedWrites: 0,
      staleAccepted: 0,
      highest: '0',
      highestToken: 0n,
    };
    keys.set(key, found);
  }
  return found;
}

/** Checks the token; raises the highest seen. Returns false when the operation must be refused. */
function admit(entry: KeyStats & { highestToken: bigint }, token: bigint): boolean {
  if (token < entry.highestToken) {
    if (fenced) return false;
    entry.staleAccepted += 1;
    return true;
  }
  entry.highestToken = token;
  entry.highest = token.toString();
  return true;
}

function handle(request: RegisterRequest): RegisterReply {
  switch (request.op) {
    case 'read': {
      const entry = cell(request.key);
      if (!admit(entry, BigInt(request.token))) {
        entry.rejectedReads += 1;
        return { id: request.id, ok: false, stale: true, highest: entry.highest };
      }
      return { id: request.id, ok: true, value: entry.value };
    }
    case 'write': {
      const entry = cell(request.key);
      if (!admit(entry, BigInt(request.token))) {
        entry.rejectedWrites += 1;
        return { id: request.id, ok: false, stale: true, highest: entry.highest };
      }
      entry.value = request.value;
      entry.accepted += 1;
      if (keepHistory) {
        let history = histories.get(request.key);
        if (!history) histories.set(request.key, (history = []));
        history.push({
          token: request.token,
          value: request.value,
          worker: request.worker,
          at: process.hrtime.bigint().toString(),
        });
      }
      return { id: request.id, ok: true };
    }
    case 'stats': {
      const out: Record<string, KeyStats> = {};
      for (const [key, { highestToken: _, ...stats }] of keys) out[key] = stats;
      return { id: request.id, ok: true, stats: { fenced, keys: out } };
    }
    case 'history':
      return { id: request.id, ok: true, history: histories.get(request.key) ?? [] };
  }
}

function serve(socket: Socket): void {
  socket.setNoDelay(true);
  socket.setEncoding('utf8');
  let buffered = '';
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let newline: number;
    let out = '';
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      let request: RegisterRequest;
      try {
        request = JSON.parse(line) as RegisterRequest;
      } catch {
        continue;
      }
      let reply: RegisterReply;
      try {
        reply = handle(request);
      } catch (error) {
        reply = { id: request.id, ok: false, stale: false, error: String(error) };
      }
      out += `${JSON.stringify(reply)}\n`;
    }
    if (out) socket.write(out);
  });
  socket.on('error', () => socket.destroy());
}

const server = createServer(serve);
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') process.exit(3);
  process.send?.({ type: 'listening', port: address.port });
});

// The parent is gone (even after a SIGKILL): do not linger.
process.on('disconnect', () => process.exit(0));
