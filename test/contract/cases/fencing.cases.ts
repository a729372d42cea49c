import type { ContractContext } from '../contract-context';

export function fencingCases(ctx: ContractContext): void {
  it('hands successive holders (other connections, acquire and tryAcquire) strictly increasing bigint fencing tokens', async () => {
    const services = [ctx.service(), ctx.service(), ctx.service()];
    const tokens: bigint[] = [];
    for (let round = 0; round < 6; round++) {
      const locks = services[round % services.length];
      const lock =
        round % 2 === 0
          ? await locks.acquire('fenced', { ttl: 10_000 })
          : await locks.tryAcquire('fenced', { ttl: 10_000 });
      expect(lock).not.toBeNull();
      expect(typeof lock!.fencingToken).toBe('bigint');
      tokens.push(lock!.fencingToken);
      await lock!.release();
    }
    for (let i = 1; i < tokens.length; i++) {
      expect(tokens[i] > tokens[i - 1]).toBe(true);
    }
  });
}
