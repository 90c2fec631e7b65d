/**
 * The live accuracy meter (docs/proving.md): for a sample of the subjects
 * of approximate limits, the decision script also keeps an exact sliding-window log of the same
 * limit and window, and reports what it would have decided (lib/store/types.ts AccuracySample).
 * The decision server exports both admission counts as `sluice_accuracy_*` and the usage
 * aggregates carry them to the dashboards and the divergence alert.
 *
 * Which subjects: `SLUICE_ACCURACY_SAMPLE` (a fraction, default 0.01; 0 turns the meter off) of the
 * counter keys, chosen by a hash of the key (so the same subjects, on every decision server and
 * after restarts, and every request of a sampled subject, which an exact comparison needs). Only
 * approximate algorithms are sampled: the sliding window counter (an estimate of the log) and the
 * fixed window (a log with its window edge reset); the other algorithms are not approximations of
 * a window count.
 *
 * What an unsampled decision pays: one 32-bit hash (FNV-1a) of the counter key of each approximate
 * check (about 0.1 µs), and nothing in Redis. A sampled one pays the exact log's ZCOUNT, ZADD and
 * trim in the same script, and skips the local deny cache (the log must see every request).
 */

export const DEFAULT_ACCURACY_SAMPLE = 0.01;

/**
 * 32-bit FNV-1a of a string's UTF-16 code units, then murmur3's finaliser: keys differ mostly in
 * their last characters (the subject), and plain FNV-1a leaves those in the low bits, while the
 * sample is taken from the high ones.
 */
function hash32(text: string): number {
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

/** Whether the subject counted under `key` is in the meter's sample of `fraction` (0 … 1). */
export function isSampled(key: string, fraction: number): boolean {
  if (fraction <= 0) return false;
  if (fraction >= 1) return true;
  return hash32(key) < fraction * 0x1_0000_0000;
}
