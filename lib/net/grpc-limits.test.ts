import { describe, expect, it } from "vitest";
import { DEFAULT_GRPC_LIMITS, GrpcSweeper, type TimedSession } from "./grpc-limits";

function clock() {
  const c = { nowMs: 0, now: () => c.nowMs };
  return c;
}

describe("the gRPC sweep (one timer for every call and connection)", () => {
  it("ends each call still open at its deadline, oldest first, and never one that finished", () => {
    const c = clock();
    const sweeper = new GrpcSweeper({ callTimeoutMs: 1_000, idleTimeoutMs: 60_000 }, c.now);
    const expired: string[] = [];
    const call = (name: string) => sweeper.addCall({ expire: () => expired.push(name) });
    call("a");
    c.nowMs = 400;
    const b = call("b");
    c.nowMs = 700;
    call("c");
    sweeper.removeCall(b);
    c.nowMs = 999;
    sweeper.sweep();
    expect(expired).toEqual([]);
    c.nowMs = 1_000;
    sweeper.sweep();
    expect(expired).toEqual(["a"]);
    c.nowMs = 1_700;
    sweeper.sweep();
    sweeper.sweep();
    expect(expired).toEqual(["a", "c"]);
  });

  it("closes a connection once it has had no call for the idle timeout, and never one with a call open", () => {
    const c = clock();
    const sweeper = new GrpcSweeper({ callTimeoutMs: 1_000, idleTimeoutMs: 5_000 }, c.now);
    const closed: string[] = [];
    const session = (name: string, idleSinceMs: number | null): TimedSession => ({ idleSinceMs, closeIdle: () => closed.push(name) });
    const busy = session("busy", null);
    const idle = session("idle", 0);
    const gone = session("gone", 0);
    for (const s of [busy, idle, gone]) sweeper.addSession(s);
    sweeper.removeSession(gone);
    c.nowMs = 4_999;
    sweeper.sweep();
    expect(closed).toEqual([]);
    c.nowMs = 60_000;
    sweeper.sweep();
    sweeper.sweep();
    expect(closed).toEqual(["idle"]);
  });

  it("sweeps every tenth of the shorter limit, between 10 ms and 1 s", () => {
    expect(new GrpcSweeper(DEFAULT_GRPC_LIMITS).sweepMs).toBe(500);
    expect(new GrpcSweeper({ callTimeoutMs: 50, idleTimeoutMs: 60_000 }).sweepMs).toBe(10);
    expect(new GrpcSweeper({ callTimeoutMs: 600_000, idleTimeoutMs: 600_000 }).sweepMs).toBe(1_000);
  });
});
