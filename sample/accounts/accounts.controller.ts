import { BadRequestException, Body, Controller, Get, Param, Post } from '@nestjs/common';
import { WithLock } from '../../lib';
import { AccountsService, AccountView } from './accounts.service';

interface TransferRequest {
  from: string;
  to: string;
  amount: number;
}

@Controller('accounts')
export class AccountsController {
  constructor(private readonly accounts: AccountsService) {}

  @Get(':id')
  get(@Param('id') id: string): Promise<AccountView> {
    return this.accounts.get(id);
  }

  /**
   * Two keys, taken in sorted order: a transfer a->b and one b->a at the same moment cannot deadlock,
   * and the total across accounts never changes.
   */
  @Post('transfer')
  @WithLock(['account:<<from>>', 'account:<<to>>'])
  transfer(@Body() body: TransferRequest): Promise<{ from: AccountView; to: AccountView }> {
    if (typeof body.amount !== 'number' || !Number.isFinite(body.amount) || body.amount <= 0) {
      throw new BadRequestException('amount must be a positive number.');
    }
    return this.accounts.transfer(String(body.from), String(body.to), body.amount);
  }
}
