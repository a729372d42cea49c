/** A promise with its resolve function. */
export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

/**
 * Lets a test hold a handler at a known point: the handler calls `pass(name)`, which announces it is inside
 * (`entered(name)` resolves) and waits until the test calls `open(name)`. Orders events without sleeps.
 */
export class Gates {
  private readonly gates = new Map<string, { entered: Deferred; open: Deferred }>();

  pass(name: string): Promise<void> {
    const gate = this.gate(name);
    gate.entered.resolve();
    return gate.open.promise;
  }

  entered(name: string): Promise<void> {
    return this.gate(name).entered.promise;
  }

  open(name: string): void {
    this.gate(name).open.resolve();
  }

  /** Lets every handler still waiting finish, so a test never leaves one behind. */
  openAll(): void {
    for (const gate of this.gates.values()) gate.open.resolve();
  }

  private gate(name: string): { entered: Deferred; open: Deferred } {
    let gate = this.gates.get(name);
    if (!gate) {
      gate = { entered: deferred(), open: deferred() };
      this.gates.set(name, gate);
    }
    return gate;
  }
}

/** Resolves once `check()` is true, polling every 10 ms; rejects after `ms`. For states that emit no event. */
export async function eventually(check: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
