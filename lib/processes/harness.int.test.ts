/**
 * The process harness: a process that dies while it is being waited for ends the wait at once with
 * its exit code and output (it used to be waited for until the 90 s start-up limit, then reported as
 * a timeout without its output).
 */
import { expect, it } from "vitest";
import { spawnWorker, until } from "./harness";

it("a process that exits during start-up fails the wait at once, with its exit code and output", async () => {
  const started = performance.now();
  // An invalid setting: lib/env.ts names it and the worker exits 1 before it logs "worker started".
  await expect(spawnWorker({ DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/test", LOG_LEVEL: "loud" })).rejects.toThrow(/worker exited with code 1: .*LOG_LEVEL/s);
  expect(performance.now() - started).toBeLessThan(30_000);
}, 60_000);

it("until: returns once the condition holds, ends with the condition's own error, and names what it waited for", async () => {
  let n = 0;
  await until("the third poll", () => ++n === 3, 5_000);
  expect(n).toBe(3);
  await expect(until("a failing check", () => Promise.reject(new Error("broken")), 5_000)).rejects.toThrow("broken");
  await expect(until("never", () => false, 120)).rejects.toThrow("timed out after 120 ms waiting for never");
});
