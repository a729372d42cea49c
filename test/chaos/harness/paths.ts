import { join } from 'node:path';

/** Lets forked processes (plain node, outside Jest) require our TypeScript sources. */
export const TS_REGISTER = join(__dirname, '..', '..', 'support', 'ts-register.js');
