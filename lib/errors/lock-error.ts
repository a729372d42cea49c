/** Base class of every error this library throws on purpose. `instanceof LockError` catches them all. */
export abstract class LockError extends Error {
  abstract override readonly name: string;
}
