/**
 * The decision-path half of `regions: shared` (lib/regions/replication.ts): which window a unit
 * belongs to, the outbox's coalescing and its bound, and which decisions add to it.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../store/memory";
import { decodeReplication, encodeReplication, replicatedWindow, replicationMessageSchema, ReplicationOutbox, withReplication } from "./replication";
import type { LimitCheck } from "../store/types";
import { replicatedCheck } from "./testing/checks";

const check = (over: Partial<LimitCheck> = {}): LimitCheck => replicatedCheck("sl:{t:acme}:c:free-tenant:_", { limit: 3, burst: 3, windowMs: 1_000, ...over });

function outbox(maxEntries = 100, fullEntries = 50) {
  const events: string[] = [];
  const box = new ReplicationOutbox({ maxEntries, fullEntries, onFirst: () => events.push("first"), onFull: () => events.push("full") });
  return { box, events };
}

describe("the window a replicated unit belongs to", () => {
  it("is the fixed window's own key, <counter>:<windowStartMs>, aligned to the epoch, expiring at the window's end", () => {
    expect(replicatedWindow(check(), 12_345)).toEqual({ key: "sl:{t:acme}:c:free-tenant:_:12000", field: "", expireAtMs: 13_000, subWindows: 0 });
  });

  it("is the sliding window counter's sub-window field, expiring k + 1 sub-windows later", () => {
    const swc = check({ algorithm: "sliding_window_counter", windowMs: 60_000, precision: 6 });
    // sub = 10 s; now in sub-window 7 (70–80 s): the hash's expiry after that write is (7 + 6 + 1) × 10 s
    expect(replicatedWindow(swc, 75_000)).toEqual({ key: "sl:{t:acme}:c:free-tenant:_", field: "7", expireAtMs: 140_000, subWindows: 6 });
    expect(replicatedWindow(check({ algorithm: "sliding_window_counter", windowMs: 1_000 }), 2_500)).toMatchObject({ field: "2", expireAtMs: 4_000, subWindows: 1 });
  });

  it("is none for algorithms whose counters do not simply add up, and for a weighted cap", () => {
    for (const algorithm of ["token_bucket", "leaky_bucket", "sliding_window_log", "concurrency", "quota"] as const) expect(replicatedWindow(check({ algorithm }), 1)).toBeNull();
    expect(replicatedWindow(check({ algorithm: "sliding_window_counter", fairShare: { weight: 1, member: "acme" } }), 1)).toBeNull();
  });
});

describe("the outbox", () => {
  it("coalesces units per counter and window: a hot counter is one entry per batch", () => {
    const { box, events } = outbox();
    const w = replicatedWindow(check(), 100)!;
    for (let i = 0; i < 1_000; i++) box.add(w, 1, 100 + i);
    box.add(replicatedWindow(check(), 1_100)!, 2, 1_100); // the next window: its own entry
    expect(box.size).toBe(2);
    expect(events).toEqual(["first"]);
    const [batch] = box.take(999, 100); // before the first window ends
    expect(batch!.firstAdmitMs).toBe(100);
    expect(batch!.entries.map((e) => [e.key, e.units])).toEqual([
      ["sl:{t:acme}:c:free-tenant:_:0", 1_000],
      ["sl:{t:acme}:c:free-tenant:_:1000", 2],
    ]);
    expect(box.size).toBe(0);
  });

  it("asks for a flush once full, and splits what it holds into batches of the size asked", () => {
    const { box, events } = outbox(100, 3);
    for (let i = 0; i < 7; i++) box.add({ key: `k${i}:0`, field: "", expireAtMs: 10_000, subWindows: 0 }, 1, 5);
    expect(events).toEqual(["first", "full"]);
    expect(box.take(0, 3).map((b) => b.entries.length)).toEqual([3, 3, 1]);
  });

  it("leaves out windows that ended: nobody counts them any more", () => {
    const { box } = outbox();
    box.add({ key: "old:0", field: "", expireAtMs: 1_000, subWindows: 0 }, 4, 10);
    box.add({ key: "live:1000", field: "", expireAtMs: 2_000, subWindows: 0 }, 1, 1_010);
    expect(box.take(1_000, 10).flatMap((b) => b.entries.map((e) => e.key))).toEqual(["live:1000"]);
  });

  it("is bounded: beyond maxEntries a new counter's units are dropped and counted, known ones still add up", () => {
    const { box } = outbox(2, 50);
    box.add({ key: "a:0", field: "", expireAtMs: 9, subWindows: 0 }, 1, 0);
    box.add({ key: "b:0", field: "", expireAtMs: 9, subWindows: 0 }, 1, 0);
    box.add({ key: "c:0", field: "", expireAtMs: 9, subWindows: 0 }, 5, 0);
    box.add({ key: "a:0", field: "", expireAtMs: 9, subWindows: 0 }, 2, 0);
    expect(box.size).toBe(2);
    expect(box.droppedUnits).toBe(5);
    expect(box.take(0, 10)[0]!.entries.find((e) => e.key === "a:0")!.units).toBe(3);
  });
});

describe("the store with replication", () => {
  it("adds the cost of every shared check of a committed decision, and nothing for a denial, a dry run or a local check", async () => {
    const { box } = outbox();
    const store = withReplication(createMemoryStore({ clock: () => 5_500 }), box);
    const local = check({ key: "sl:{t:acme}:c:local:_", replicate: undefined, limit: 100 });
    expect((await store.check([check(), local], { cost: 2, dryRun: false })).allowed).toBe(true);
    expect((await store.check([check(), local], { cost: 1, dryRun: true })).allowed).toBe(true);
    expect((await store.check([check(), local], { cost: 2, dryRun: false })).allowed).toBe(false); // 2 + 2 > 3
    const entries = box.take(0, 10).flatMap((b) => b.entries);
    expect(entries).toEqual([{ key: "sl:{t:acme}:c:free-tenant:_:5000", field: "", units: 2, expireAtMs: 6_000, subWindows: 0 }]);
  });

  it("adds nothing for a shadow check that would have denied (it consumed nothing)", async () => {
    const { box } = outbox();
    const store = withReplication(createMemoryStore({ clock: () => 0 }), box);
    const shadow = check({ mode: "shadow", limit: 1 });
    await store.check([shadow], { cost: 1, dryRun: false });
    await store.check([shadow], { cost: 1, dryRun: false }); // over: shadow-denied, still allowed
    expect(box.take(0, 10).flatMap((b) => b.entries).map((e) => e.units)).toEqual([1]);
  });
});

describe("the replication message", () => {
  it("round-trips, and refuses entries that are not a counter's window", () => {
    const batch = { firstAdmitMs: 7, entries: [{ key: "sl:{t:acme}:c:x:_", field: "12", units: 3, expireAtMs: 99, subWindows: 6 }] };
    const message = encodeReplication("eu", batch);
    const parsed = replicationMessageSchema.parse(JSON.parse(JSON.stringify(message)));
    expect(decodeReplication(parsed)).toEqual(batch.entries);
    expect(replicationMessageSchema.safeParse({ ...message, entries: [["k", "1; DEL", 1, 9, 1]] }).success).toBe(false);
    expect(replicationMessageSchema.safeParse({ ...message, entries: [["k", "", 0, 9, 0]] }).success).toBe(false);
  });
});
