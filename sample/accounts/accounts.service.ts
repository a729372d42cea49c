import { BadRequestException, Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeKeyPart, LockService } from '../../lib';
import { SAMPLE_CONFIG, SampleConfig } from '../config/sample-config';
import { DocumentStore } from '../storage/document-store';

const ACCOUNTS = 'accounts';
const OPENING_BALANCE = 100;

export interface Balance {
  balance: number;
}

export interface AccountView {
  id: string;
  balance: number;
}

@Injectable()
export class AccountsService {
  constructor(
    private readonly store: DocumentStore,
    private readonly locks: LockService,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  async get(id: string): Promise<AccountView> {
    const { data } = await this.store.read<Balance>(ACCOUNTS, id, { balance: OPENING_BALANCE });
    return { id, balance: data.balance };
  }

  /** Must run while holding both accounts' locks (the controller's @WithLock takes them). */
  async transfer(from: string, to: string, amount: number): Promise<{ from: AccountView; to: AccountView }> {
    if (from === to) throw new BadRequestException('from and to must be different accounts.');
    // The request's locks, found by key: the same encoding @WithLock applied to the placeholders.
    const fromLock = this.locks.current(`account:${encodeKeyPart(from)}`);
    const toLock = this.locks.current(`account:${encodeKeyPart(to)}`);
    if (!fromLock || !toLock) throw new Error('transfer() must run under the locks of both accounts.');
    const [source, target] = await Promise.all([this.get(from), this.get(to)]);
    if (source.balance < amount)
      throw new BadRequestException(`Account ${from} has ${source.balance}, less than ${amount}.`);
    await sleep(this.config.editDelayMs, undefined, { signal: AbortSignal.any([fromLock.signal, toLock.signal]) });
    await this.store.write<Balance>(ACCOUNTS, from, { balance: source.balance - amount }, fromLock.fencingToken);
    await this.store.write<Balance>(ACCOUNTS, to, { balance: target.balance + amount }, toLock.fencingToken);
    return { from: { id: from, balance: source.balance - amount }, to: { id: to, balance: target.balance + amount } };
  }
}
