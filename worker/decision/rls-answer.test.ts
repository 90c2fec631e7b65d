import { describe, expect, it } from "vitest";
import type { DecisionAnswer } from "../../lib/decision/answer";
import { NotReadyError, type DecisionRequest } from "../../lib/decision/engine";
import type { RlsRequestMessage } from "../../lib/rls/messages";
import { createRlsAnswer } from "./rls-answer";

const allowed = (remaining: number): DecisionAnswer => ({
  allowed: true,
  status: 200,
  reason: "ok",
  tenant: "acme",
  tier: "free",
  operation: "orders",
  policyVersion: 1,
  limit: 10,
  remaining,
  resetSeconds: 60,
  retryAfterSeconds: 0,
  delayMs: 0,
  headers: { "RateLimit-Policy": '"free";q=10;w=60' },
});

const descriptor = (key: string) => ({ entries: [{ key: "api_key", value: key }, { key: "operation", value: "orders" }] });
const request = (...keys: string[]): RlsRequestMessage => ({ domain: "sluice", descriptors: keys.map(descriptor) });

/** An engine whose decisions the test settles by hand, in any order. */
function heldEngine() {
  const pending: { request: DecisionRequest; resolve(a: DecisionAnswer): void; reject(e: unknown): void }[] = [];
  const engine = {
    decide: (r: DecisionRequest) => new Promise<DecisionAnswer>((resolve, reject) => pending.push({ request: r, resolve, reject })),
    release: () => Promise.resolve(true),
  };
  return { engine, pending };
}

describe("ShouldRateLimit without its transport", () => {
  it("starts every descriptor's decision at once and answers in descriptor order, however they settle", async () => {
    const { engine, pending } = heldEngine();
    const answer = createRlsAnswer({ engine, envoy: undefined, domain: "sluice" })(request("k1", "k2"));
    expect(pending.map((p) => p.request.key)).toEqual(["k1", "k2"]);
    pending[1]!.resolve(allowed(2));
    pending[0]!.resolve(allowed(7));
    const result = await answer;
    expect(result.ok && result.response.statuses.map((s) => s.limit_remaining)).toEqual([7, 2]);
  });

  it("answers one descriptor from its one decision", async () => {
    const { engine, pending } = heldEngine();
    const answer = createRlsAnswer({ engine, envoy: undefined, domain: "sluice" })(request("k1"));
    pending[0]!.resolve(allowed(4));
    const result = await answer;
    expect(result.ok && result.response.overall_code).toBe("OK");
    expect(result.ok && result.response.statuses[0]).toMatchObject({ code: "OK", limit_remaining: 4, current_limit: { name: "free", requests_per_unit: 10, unit: "MINUTE" } });
  });

  it("is not_ready before a policy is loaded, for one descriptor or several; any other failure rejects", async () => {
    for (const keys of [["k1"], ["k1", "k2"]]) {
      const { engine, pending } = heldEngine();
      const answer = createRlsAnswer({ engine, envoy: undefined, domain: "sluice" })(request(...keys));
      for (const p of pending) p.reject(new NotReadyError());
      expect(await answer).toEqual({ ok: false, kind: "not_ready", field: null, message: "no policy loaded yet" });
    }
    const { engine, pending } = heldEngine();
    const answer = createRlsAnswer({ engine, envoy: undefined, domain: "sluice" })(request("k1"));
    pending[0]!.reject(new Error("broken store"));
    await expect(answer).rejects.toThrow("broken store");
  });

  it("refuses a malformed request by its field without deciding anything", async () => {
    const { engine, pending } = heldEngine();
    const result = await createRlsAnswer({ engine, envoy: undefined, domain: "sluice" })({ domain: "sluice", descriptors: [] });
    expect(result).toMatchObject({ ok: false, kind: "invalid", field: "descriptors" });
    expect(pending).toHaveLength(0);
  });

  it("sends another domain to the Envoy decider, whose NotReadyError is not_ready too", async () => {
    const { engine } = heldEngine();
    const envoy = { decide: () => Promise.reject(new NotReadyError()) };
    expect(await createRlsAnswer({ engine, envoy, domain: "sluice" })({ domain: "edge", descriptors: [descriptor("k")] })).toMatchObject({ ok: false, kind: "not_ready" });
  });
});
