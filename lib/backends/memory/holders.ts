/**
 * One key's holders by owner token. Almost every key has a single holder at a time, kept in two fields; a Map is
 * made only when a second one arrives (readers, semaphore permits). A Map per key would be some 200 bytes of
 * garbage on every uncontended lock.
 */
export class Holders<T> {
  private soleToken: string | undefined;
  private sole: T | undefined;
  private many: Map<string, T> | undefined;

  get size(): number {
    if (this.many) return this.many.size;
    return this.soleToken === undefined ? 0 : 1;
  }

  get(token: string): T | undefined {
    if (this.many) return this.many.get(token);
    return token === this.soleToken ? this.sole : undefined;
  }

  has(token: string): boolean {
    if (this.many) return this.many.has(token);
    return token === this.soleToken;
  }

  set(token: string, holder: T): void {
    if (this.many) {
      this.many.set(token, holder);
    } else if (this.soleToken === undefined || this.soleToken === token) {
      this.soleToken = token;
      this.sole = holder;
    } else {
      this.many = new Map([[this.soleToken, this.sole as T]]);
      this.many.set(token, holder);
      this.soleToken = undefined;
      this.sole = undefined;
    }
  }

  delete(token: string): boolean {
    if (this.many) return this.many.delete(token);
    if (token !== this.soleToken) return false;
    this.soleToken = undefined;
    this.sole = undefined;
    return true;
  }

  /** Token and holder pairs; deleting the current one while iterating is allowed, as with a Map. */
  entries(): Iterable<[string, T]> {
    if (this.many) return this.many.entries();
    return this.soleToken === undefined ? [] : [[this.soleToken, this.sole as T]];
  }

  values(): Iterable<T> {
    if (this.many) return this.many.values();
    return this.soleToken === undefined ? [] : [this.sole as T];
  }
}
