import { describe, expect, it } from "vitest";
import { conformanceSuite, limitCheck, manualClock } from "./testing/conformance";
import { createMemoryStore } from "./memory";
import { quotaWindow } from "../policy/quota-window";
import type { CompiledQuota, CompiledTenant } from "../policy/compiled";

conformanceSuite("memory", () => ({ makeStore: (clock) => createMemoryStore({ clock }), prefix: "m:" }));

describe("memory store", () => {
  it("forgets every counter once its windows have passed", async () => {
    const clock = manualClock();
    const store = createMemoryStore({ clock });
    for (const algorithm of ["fixed_window", "sliding_window_counter", "sliding_window_log", "token_bucket", "concurrency"] as const) {
      await store.check([limitCheck("m:", { algorithm, limit: 3, windowMs: 1_000, leaseTtlMs: 2_000 })], { cost: 1, dryRun: false });
    }
    expect(store.size()).toBe(5);
    clock.advance(2_001);
    expect(store.size()).toBe(0);
  });
});

describe("memory store: quota counters by their Redis names", () => {
  it("reads `<key>:<label>` as the units counted in that tenant period, 0 once the store's clock has left it", async () => {
    // Anchored on the 15th in Los Angeles: the period Nov 15 – Dec 14 ends at 08:00Z on Dec 15.
    const clock = manualClock(Date.UTC(2026, 11, 14, 20));
    const store = createMemoryStore({ clock });
    const tenant: CompiledTenant = { slug: "acme", name: "Acme", tier: "pro", status: "active", overrides: [], billing: { anchor: "2026-03-15", timeZone: "America/Los_Angeles" } };
    const quota: CompiledQuota = { id: "q1", operation: "*", period: "month", limit: 10, overage: "block" };
    const key = "m:{t:acme}:q:q1";
    const check = () => limitCheck("m:", { algorithm: "quota", kind: "quota", key, limit: 10, burst: 10, windowMs: 0, period: "month", overage: "block", quotaWindow: quotaWindow(clock(), quota, tenant) });
    for (let i = 0; i < 3; i++) expect((await store.check([check()], { cost: 2, dryRun: false })).allowed).toBe(true);
    const nov = `${key}:2026-11-15@America/Los_Angeles`;
    const dec = `${key}:2026-12-15@America/Los_Angeles`;
    expect(store.readQuotaCounters([nov, dec, "m:{t:other}:q:q1:2026-12"])).toEqual(new Map([[nov, 6], [dec, 0], ["m:{t:other}:q:q1:2026-12", 0]]));
    // A dry run counts nothing.
    await store.check([check()], { cost: 1, dryRun: true });
    expect(store.readQuotaCounters([nov]).get(nov)).toBe(6);
    // 00:00 PST on Dec 15: a new period; the old label no longer reads the counter's units.
    clock.set(Date.UTC(2026, 11, 15, 8));
    await store.check([check()], { cost: 1, dryRun: false });
    expect(store.readQuotaCounters([nov, dec])).toEqual(new Map([[nov, 0], [dec, 1]]));
  });
});
