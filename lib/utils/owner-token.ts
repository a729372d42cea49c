import { randomFillSync } from 'node:crypto';

/*
 * Owner tokens are random v4 UUIDs, as crypto.randomUUID() makes them (the ZooKeeper backend needs that form).
 * Node 20 builds each one from about twenty string concatenations, some 600 bytes of garbage per grant; this
 * writes the 36 characters into one buffer and makes a single string of it. The randomness is the same:
 * 122 bits from the CSPRNG, drawn 128 tokens at a time as Node itself does.
 */

const TOKENS_PER_FILL = 128;
const random = Buffer.alloc(16 * TOKENS_PER_FILL);
/** Index of the next unused token in `random`; a full batch means "refill first". */
let nextToken = TOKENS_PER_FILL;
const text = Buffer.alloc(36);
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const DASH = 0x2d;

/** A new random owner token: a lowercase v4 UUID (xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx). */
export function newOwnerToken(): string {
  if (nextToken === TOKENS_PER_FILL) {
    randomFillSync(random);
    nextToken = 0;
  }
  const offset = 16 * nextToken++;
  random[offset + 6] = (random[offset + 6] & 0x0f) | 0x40; // version 4
  random[offset + 8] = (random[offset + 8] & 0x3f) | 0x80; // RFC 4122 variant
  let at = 0;
  for (let index = 0; index < 16; index++) {
    if (index === 4 || index === 6 || index === 8 || index === 10) text[at++] = DASH;
    const byte = random[offset + index];
    text[at++] = HEX_DIGITS[byte >> 4];
    text[at++] = HEX_DIGITS[byte & 0x0f];
  }
  return text.toString('latin1', 0, 36);
}
