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

import { hash32 } from "../policy/hash32";

export const DEFAULT_ACCURACY_SAMPLE = 0.01;

/** Whether the subject counted under `key` is in the meter's sample of `fraction` (0 … 1). */
export function isSampled(key: string, fraction: number): boolean {
  if (fraction <= 0) return false;
  if (fraction >= 1) return true;
  return hash32(key) < fraction * 0x1_0000_0000;
}
