/**
 * How late this process's event loop ran since a given moment (ms): whether the process got the
 * CPU while it waited for something. The Redis store asks it about the wait of one script call,
 * to tell a late store answer that is load (this process was starved during that very wait, so
 * the wait measured the machine) from a store that stopped answering.
 *
 * A 10 ms timer samples the loop (about 100 wake-ups a second, a few µs each) and remembers the
 * stalls of the last two seconds with when they ended. Not `monitorEventLoopDelay`: its histogram
 * counts its own sampling period (an idle loop reads 13–16 ms) and keeps its maximum since its last
 * reset, however long ago, so an idle server looked starved and waited 1 s instead of its 25 ms
 * budget while Redis hung.
 */

/** The sampling period (ms). */
const SAMPLE_MS = 10;
/** How long stalls are remembered (ms). */
const KEEP_MS = 2_000;
/** Lateness below this is scheduling noise, not worth remembering (ms). */
const NOISE_MS = 2;

/** Stalls of the last KEEP_MS, oldest first: when each ended (performance.now()) and how late the loop was (ms). */
const stalls: { endedAtMs: number; lateMs: number }[] = [];
let watching = false;

/** Starts sampling (idempotent; the timer is unref'd, it never keeps a process alive). */
export function watchLoopDelay(): void {
  if (watching) return;
  watching = true;
  let lastMs = performance.now();
  const timer = setInterval(() => {
    const nowMs = performance.now();
    const lateMs = nowMs - lastMs - SAMPLE_MS;
    lastMs = nowMs;
    if (lateMs > NOISE_MS) stalls.push({ endedAtMs: nowMs, lateMs });
    while (stalls.length > 0 && nowMs - stalls[0]!.endedAtMs > KEEP_MS) stalls.shift();
  }, SAMPLE_MS);
  timer.unref();
}

/**
 * The longest the event loop ran late (ms) in a stall that ended after `sinceMs`
 * (performance.now() time; at most two seconds back). 0 when not watching.
 */
export function loopLateMaxMs(sinceMs: number): number {
  let maxMs = 0;
  for (let i = stalls.length - 1; i >= 0 && stalls[i]!.endedAtMs > sinceMs; i--) if (stalls[i]!.lateMs > maxMs) maxMs = stalls[i]!.lateMs;
  return maxMs;
}
