/**
 * The fenced register: the resource the chaos workers' locks protect, living in its own OS process, outside
 * the lock service, so faults on the lock server never touch it. Line-delimited JSON over loopback TCP.
 *
 * Every operation carries the caller's fencing token (a decimal string). A fenced register refuses any
 * operation whose token is lower than the highest it has seen on that key, reads included: a holder that
 * read under token 5 must not write after a holder with token 6 has read, or the token-6 holder's
 * increment would overwrite with a stale value. An unfenced register (the control run) accepts everything.
 */
export type RegisterRequest =
  | { readonly id: number; readonly op: 'read'; readonly key: string; readonly token: string }
  | {
      readonly id: number;
      readonly op: 'write';
      readonly key: string;
      readonly token: string;
      readonly value: number;
      readonly worker: string;
    }
  | { readonly id: number; readonly op: 'stats' }
  | { readonly id: number; readonly op: 'history'; readonly key: string };

export type RegisterReply =
  | { readonly id: number; readonly ok: true; readonly value?: number }
  | { readonly id: number; readonly ok: false; readonly stale: true; readonly highest: string }
  | { readonly id: number; readonly ok: true; readonly stats: RegisterStats }
  | { readonly id: number; readonly ok: true; readonly history: AcceptedWrite[] }
  | { readonly id: number; readonly ok: false; readonly stale: false; readonly error: string };

export interface KeyStats {
  /** The value now. */
  value: number;
  /** Writes the register accepted and acknowledged. */
  accepted: number;
  /** Operations refused because a higher token had been seen (fenced register only). */
  rejectedReads: number;
  rejectedWrites: number;
  /** Operations that carried a lower token than one seen before but were accepted (unfenced register only). */
  staleAccepted: number;
  highest: string;
}

export interface RegisterStats {
  readonly fenced: boolean;
  readonly keys: Record<string, KeyStats>;
}

export interface AcceptedWrite {
  readonly token: string;
  readonly value: number;
  readonly worker: string;
  /** process.hrtime.bigint() in the register process, as a decimal string. */
  readonly at: string;
}

export const REGISTER_FENCED_ENV = 'NDL_CHAOS_REGISTER_FENCED';
/** Keeps the per-key history of accepted writes (off for the load scenario's many keys). */
export const REGISTER_HISTORY_ENV = 'NDL_CHAOS_REGISTER_HISTORY';
