/**
 * A stable 32-bit hash of a string: FNV-1a over its UTF-16 code units, then murmur3's finaliser.
 * Keys and slugs differ mostly in their last characters (`tenant-0041`, `tenant-0042`), and plain
 * FNV-1a leaves those in the low bits; the finaliser spreads them over all 32, so a fraction taken
 * from the high bits (the accuracy meter's sample, a rollout's cohort) is uniform. It depends only on
 * the string: every process, server and restart computes the same value.
 */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
