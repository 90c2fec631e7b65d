/**
 * The live accuracy meter (docs/proving.md): for a sample of the subjects of approximate limits, the
 * decision script also keeps an exact sliding-window log and reports what it would have decided.
 * Subjects are chosen by a hash of the counter key, so the same ones on every server and after
 * restarts, and every request of a sampled subject (an exact comparison needs them all). An
 * unsampled decision pays one 32-bit hash per approximate check (about 0.1 µs) and nothing in Redis.
 */
import { hash32 } from "../policy/hash32";

export const DEFAULT_ACCURACY_SAMPLE = 0.01;

/** Whether the subject counted under `key` is in the meter's sample of `fraction` (0 … 1). */
export function isSampled(key: string, fraction: number): boolean {
  if (fraction <= 0) return false;
  if (fraction >= 1) return true;
  return hash32(key) < fraction * 0x1_0000_0000;
}
