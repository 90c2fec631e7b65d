import { describe, expect, it } from "vitest";
import { loopLateMaxMs, watchLoopDelay } from "./loop-delay";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // the event loop cannot run
  }
}

describe("loopLateMaxMs", () => {
  it("reports a stall of the event loop only to a wait it overlapped", async () => {
    watchLoopDelay();
    await sleep(100);
    const beforeMs = performance.now();
    block(120);
    await sleep(30);
    const afterMs = performance.now();
    // The sampler was due within 10 ms of the block's start, so it saw at least 110 ms of it.
    expect(loopLateMaxMs(beforeMs)).toBeGreaterThanOrEqual(100);
    // A wait that began after the stall ended was not starved by it.
    await sleep(50);
    expect(loopLateMaxMs(afterMs)).toBeLessThan(100);
  });
});
