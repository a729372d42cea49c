/** Where a member sits in its SlotList, -1 while it is in none. A symbol, so it stays out of public APIs. */
export const LIST_SLOT: unique symbol = Symbol('SlotList slot');

export interface Slotted {
  [LIST_SLOT]: number;
}

/**
 * An unordered set of objects that know their own position, for members that come and go on every lock: adding
 * and removing are O(1) and allocate nothing. A Set of such short-lived members, hovering between 0 and 1 entries,
 * reallocates its hash table on V8 as it empties and fills, some 300 bytes per add and delete. Each object can be
 * in one SlotList at a time.
 */
export class SlotList<T extends Slotted> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  add(item: T): void {
    if (this.has(item)) return;
    item[LIST_SLOT] = this.items.length;
    this.items.push(item);
  }

  delete(item: T): boolean {
    if (!this.has(item)) return false;
    const slot = item[LIST_SLOT];
    const last = this.items.pop()!;
    if (last !== item) {
      this.items[slot] = last;
      last[LIST_SLOT] = slot;
    }
    item[LIST_SLOT] = -1;
    return true;
  }

  has(item: T): boolean {
    return item[LIST_SLOT] >= 0 && this.items[item[LIST_SLOT]] === item;
  }

  /** A snapshot, safe to use while members are added or removed. */
  toArray(): T[] {
    return this.items.slice();
  }
}
