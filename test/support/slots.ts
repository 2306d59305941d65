/** Redis Cluster's key → slot mapping (CRC16-XMODEM of the hash tag, mod 16384), for tests about key spread. */
export function slotOf(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(key)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** Which of `masters` masters owns a slot when `redis-cli --cluster create` splits the slots evenly. */
export function masterOf(slot: number, masters: number): number {
  return Math.min(masters - 1, Math.floor((slot * masters) / 16384));
}
