/**
 * A clock whose sleeps return at once and move its time forward: tests record every wait the SDK
 * chose (and assert on them) without sleeping.
 */
import type { Clock } from "../clock";

export class FakeClock implements Clock {
  readonly sleeps: number[] = [];

  constructor(private nowMs = 1_700_000_000_000) {}

  now(): number {
    return this.nowMs;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason;
    this.sleeps.push(ms);
    this.nowMs += Math.max(0, ms);
  }
}
