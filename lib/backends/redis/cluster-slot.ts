/**
 * Redis Cluster's key slot: CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the hash tag, modulo 16384.
 * Only used to group pipelined renewals by the node that serves them; Redis itself decides where keys live.
 */
const TABLE = buildTable();

function buildTable(): Uint16Array {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[byte] = crc & 0xffff;
  }
  return table;
}

export function crc16(data: Uint8Array): number {
  let crc = 0;
  for (const byte of data) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc;
}

/** The slot of every key whose hash tag is `tag` (our keys always have one, and it is never empty). */
export function slotOfTag(tag: string): number {
  return crc16(Buffer.from(tag, 'utf8')) % 16384;
}
