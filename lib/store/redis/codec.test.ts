import { describe, expect, it } from "vitest";
import { checkSpec, CODE, ERROR, FLAG } from "../lua/wire";
import { limitCheck } from "../testing/conformance";
import { decodeDecide, encodeDecide } from "./codec";

const a = limitCheck("c:", { algorithm: "fixed_window", limit: 10 });
const b = limitCheck("c:", { algorithm: "sliding_window_counter", limit: 20 });
const specA = checkSpec(a, "");
const specB = checkSpec(b, "");

describe("DECIDE's codec (lib/store/lua/wire.ts)", () => {
  it("sends each limit string and each decision shape once; a decision of the usual shape costs its keys alone", () => {
    const batch = [0, 1, 2].map(() => ({ checks: [a], cost: 1, flags: 0 }));
    const { keys, args } = encodeDecide(batch, "");
    expect(keys).toEqual([a.key, a.key, a.key]);
    // now, N, S, the limit strings, H, the shape (cost, flags, checks, limit indexes); H = 1: no per-decision index
    expect(args).toEqual(["", "3", "1", specA, "1", "1", "0", "1", "1"]);
  });

  it("names each decision's shape only when the call has several", () => {
    const batch = [
      { checks: [a, b], cost: 1, flags: 0 },
      { checks: [a, b], cost: 1, flags: 0 },
      { checks: [b], cost: 3, flags: FLAG.dryRun },
      { checks: [a, b], cost: 1, flags: 0 },
    ];
    const { keys, args } = encodeDecide(batch, "1800000000000");
    expect(keys).toEqual([a.key, b.key, a.key, b.key, b.key, a.key, b.key]);
    expect(args).toEqual(["1800000000000", "4", "2", specA, specB, "2", "1", "0", "2", "1", "2", "3", String(FLAG.dryRun), "1", "2", "1", "1", "2", "1"]);
  });

  it("reads each decision's outcomes, its error alone, and its undo commands when it asked for them", () => {
    const code = (allowed: boolean, reason: number) => (allowed ? CODE.allowed : 0) + (reason << CODE.reasonShift);
    const batch = [
      { checks: [a], cost: 1, flags: 0 },
      { checks: [b], cost: 1, flags: 0 },
      { checks: [a, b], cost: 2, flags: FLAG.undo },
    ];
    const reply = [
      1_800_000_000_000,
      ...[code(true, 0), 9, 1_800_000_001_000, 0],
      ...[ERROR, Buffer.from("WRONGTYPE Operation against a key holding the wrong kind of value")],
      ...[1, 7, ...[code(true, 0), 8, 1_800_000_001_000, 0], ...[code(true, 0), 18, 1_800_000_060_000, 0]],
      ...[3, Buffer.from("DECRBY"), Buffer.from(a.key), 2, 4, Buffer.from("HINCRBY"), Buffer.from(b.key), Buffer.from("1"), -2],
    ];
    const [first, failed, undone] = decodeDecide(reply, batch);
    expect(first).toMatchObject({ nowMs: 1_800_000_000_000, allowed: true, outcomes: [{ allowed: true, reason: "ok", remaining: 9 }], undo: [] });
    expect(failed).toBeInstanceOf(Error);
    expect(String(failed)).toMatch(/WRONGTYPE/);
    expect(undone).toMatchObject({
      allowed: true,
      outcomes: [{ remaining: 8 }, { remaining: 18 }],
      undo: [
        ["DECRBY", a.key, 2],
        ["HINCRBY", b.key, "1", -2],
      ],
    });
  });
});
