import { ClientRequest, get, IncomingMessage } from 'node:http';

export interface StreamEvent {
  type: string;
  data: Record<string, unknown>;
}

/**
 * A minimal Server-Sent Events client for tests: collects events and lets the test await the next one
 * of a type. Resolves `ended` when the server closes the stream (or the connection drops).
 */
export class EventStream {
  readonly events: StreamEvent[] = [];
  readonly ended: Promise<void>;
  private buffer = '';
  private readonly waiters: {
    type: string;
    from: number;
    resolve(event: StreamEvent): void;
    reject(error: Error): void;
  }[] = [];
  private finished = false;

  private constructor(
    private readonly request: ClientRequest,
    response: IncomingMessage,
  ) {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => this.push(chunk));
    this.ended = new Promise((resolve) => {
      const end = () => {
        this.finished = true;
        for (const waiter of this.waiters.splice(0))
          waiter.reject(new Error(`stream ended before a "${waiter.type}" event`));
        resolve();
      };
      response.once('end', end);
      response.once('close', end);
      response.once('error', end);
    });
  }

  /** Opens the stream; rejects with the status and body when the server answers with anything but 200. */
  static open(url: string): Promise<EventStream> {
    return new Promise((resolve, reject) => {
      const request = get(url, { headers: { accept: 'text/event-stream' } }, (response) => {
        if (response.statusCode !== 200) {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
          response.on('end', () => reject(new Error(`GET ${url} answered ${response.statusCode}: ${body}`)));
          return;
        }
        resolve(new EventStream(request, response));
      });
      request.on('error', reject);
    });
  }

  /** The first event of `type` at or after position `from` in `events`. */
  next(type: string, from = 0): Promise<StreamEvent> {
    const found = this.events.slice(from).find((event) => event.type === type);
    if (found) return Promise.resolve(found);
    if (this.finished) return Promise.reject(new Error(`stream ended before a "${type}" event`));
    return new Promise((resolve, reject) => this.waiters.push({ type, from, resolve, reject }));
  }

  close(): void {
    this.request.destroy();
  }

  private push(chunk: string): void {
    this.buffer += chunk;
    let boundary: number;
    while ((boundary = this.buffer.indexOf('\n\n')) !== -1) {
      const block = this.buffer.slice(0, boundary);
      this.buffer = this.buffer.slice(boundary + 2);
      const event = parseBlock(block);
      if (!event) continue;
      this.events.push(event);
      for (const waiter of [...this.waiters]) {
        if (waiter.type === event.type) {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve(event);
        }
      }
    }
  }
}

function parseBlock(block: string): StreamEvent | undefined {
  let type = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) type = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).trim());
  }
  if (data.length === 0) return undefined;
  return { type, data: JSON.parse(data.join('\n')) as Record<string, unknown> };
}
