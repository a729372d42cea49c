import { RESERVED_PORTS, freeTestPorts } from './free-port';

describe('freeTestPorts', () => {
  it('gives distinct ports, none of them reserved, even when asked for many at once', async () => {
    for (let round = 0; round < 20; round++) {
      const ports = await freeTestPorts(16);
      expect(ports).toHaveLength(16);
      expect(new Set(ports).size).toBe(16);
      for (const port of ports) {
        expect(RESERVED_PORTS.has(port)).toBe(false);
        expect(port).toBeGreaterThan(0);
      }
    }
  });
});
